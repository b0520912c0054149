// cuBLAS called directly: the bf16 GEMM peak (the ceiling for prefill attention) and the plain
// cuBLAS baseline of the backend's matmul. Device buffers come from the plugin (bench.alloc),
// which runs on the same shared CUDA runtime, device 0.
#include "bench_cublas.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagoda::bench {

namespace {

void check_cuda(cudaError_t e, const char *what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void check_blas(cublasStatus_t s, const char *what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
}

// A cuBLAS handle on a stream of its own and two timing events, for one measurement.
class BlasSession {
public:
    BlasSession() {
        check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
        check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
        check_cuda(cudaEventCreate(&end_), "cudaEventCreate");
        check_blas(cublasCreate(&handle_), "cublasCreate");
        check_blas(cublasSetStream(handle_, stream_), "cublasSetStream");
    }
    ~BlasSession() {
        if (handle_ != nullptr) cublasDestroy(handle_);
        if (start_ != nullptr) cudaEventDestroy(start_);
        if (end_ != nullptr) cudaEventDestroy(end_);
        if (stream_ != nullptr) cudaStreamDestroy(stream_);
    }
    BlasSession(const BlasSession &) = delete;
    BlasSession &operator=(const BlasSession &) = delete;

    cublasHandle_t handle() const { return handle_; }

    // Like measure(): two warm-up calls, then repeats of enough calls to last the target time,
    // each timed by CUDA events on this session's stream.
    Timing time(const Options &o, const std::function<void(int64_t)> &call) {
        auto run = [&](int64_t first, int64_t count) {
            check_cuda(cudaEventRecord(start_, stream_), "cudaEventRecord");
            for (int64_t j = 0; j < count; ++j) call(first + j);
            check_cuda(cudaEventRecord(end_, stream_), "cudaEventRecord");
            check_cuda(cudaEventSynchronize(end_), "cudaEventSynchronize");
            float ms = 0.0f;
            check_cuda(cudaEventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime");
            return double(ms) * 1e-3;
        };
        run(0, 1);
        const double one = std::max(run(1, 1), 1e-9);
        Timing t;
        t.repeats = o.repeats;
        t.iterations = std::max<int64_t>(o.min_iterations, int64_t(std::ceil(o.target_seconds / one)));
        std::vector<double> per_call;
        int64_t i = 2;
        for (int r = 0; r < t.repeats; ++r) {
            per_call.push_back(run(i, t.iterations) / double(t.iterations));
            i += t.iterations;
        }
        std::sort(per_call.begin(), per_call.end());
        const size_t n = per_call.size();
        t.seconds = n % 2 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2]);
        t.best_seconds = per_call.front();
        return t;
    }

private:
    cublasHandle_t handle_ = nullptr;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t start_ = nullptr, end_ = nullptr;
};

cudaDataType_t cuda_type(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return CUDA_R_16BF;
        case PAGODA_DTYPE_F16: return CUDA_R_16F;
        default: return CUDA_R_32F;
    }
}

}  // namespace

void bench_gemm_peak(Bench &bench) {
    const Options &o = bench.options();
    // Square and large enough to fill every SM with full tiles.
    const int64_t size = o.quick ? 2048 : 8192;
    const size_t bytes = size_t(size * size) * 2;
    void *a = bench.alloc(bytes), *b = bench.alloc(bytes), *c = bench.alloc(bytes);
    bench.fill_random(a, bytes, PAGODA_DTYPE_BF16);
    bench.fill_random(b, bytes, PAGODA_DTYPE_BF16);
    BlasSession blas;
    const float alpha = 1.0f, beta = 0.0f;
    const int n = int(size);
    Timing t = blas.time(o, [&](int64_t) {
        check_blas(cublasGemmEx(blas.handle(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a,
                                CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx (bf16 peak)");
    });
    const double flops = 2.0 * double(size) * double(size) * double(size);
    bench.gemm_peak = flops / t.best_seconds;
    JsonLine line = JsonLine::start(bench, "gemm_peak_bf16");
    line.add("m", size).add("n", size).add("k", size).add("library", "cublas");
    add_rates(line, bench, t, 0, flops);
    line.add("best_tflop_per_s", bench.gemm_peak / 1e12).print();
    bench.release(a);
    bench.release(b);
    bench.release(c);
}

double cublas_matmul_seconds(Bench &bench, int64_t m, int64_t n, int64_t k,
                             pagoda_dtype_t w_dtype) {
    const Options &o = bench.options();
    const pagoda_dtype_t x_dtype = w_dtype;  // cuBLAS wants both inputs of one type
    const size_t w_bytes = size_t(n * k) * dtype_bytes(w_dtype);
    const size_t x_bytes = size_t(m * k) * dtype_bytes(x_dtype), y_bytes = size_t(m * n) * 4;
    // The same rotation of weight copies as the backend's measurement, so neither side finds
    // its weights in L2 when the other would not.
    const bool decode = m <= 16;
    const int copies = decode ? rotation_copies(o, w_bytes) : 1;
    const std::vector<void *> w = rotated_buffers(bench, w_bytes, w_dtype, copies);
    void *x = bench.alloc(x_bytes), *y = bench.alloc(y_bytes);
    bench.fill_random(x, x_bytes, x_dtype);
    bench.synchronize();

    double best = 0.0;
    {
        BlasSession blas;
        const float alpha = 1.0f, beta = 0.0f;
        Timing t = blas.time(o, [&](int64_t i) {
            // Row-major y = x·Wᵀ is column-major yᵀ = W'ᵀ·xᵀ (as the backend computes it).
            check_blas(cublasGemmEx(blas.handle(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k),
                                    &alpha, w[size_t(i % copies)], cuda_type(w_dtype), int(k), x,
                                    cuda_type(x_dtype), int(k), &beta, y, CUDA_R_32F, int(n),
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx (matmul baseline)");
        });
        best = t.best_seconds;
    }
    for (void *p : w) bench.release(p);
    bench.release(x);
    bench.release(y);
    return best;
}

}  // namespace pagoda::bench
