// y[m,n] = x[m,k] · W[n,k]ᵀ (+ bias) (+ y) through cuBLAS, f32 in, f32 compute, f32 out.
//
// cuBLAS is column-major. A row-major matrix with row stride ld is the column-major matrix of
// its transpose with the same ld, so the row-major product y = x·Wᵀ is, column-major,
// yᵀ[n,m] = W'ᵀ · xᵀ where W' is W read column-major ([k,n], ld = ldw): one GEMM with
// transa = T, transb = N, no copies.
//
// Half-precision weights are not supported yet: cuBLAS's GemmEx needs A and B of one type, and
// rounding x to bf16/f16 would break ops.h's "compute in f32" promise. They need their own
// mixed-precision GEMV/GEMM kernel (a later issue).
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bias_kernel.hpp"
#include "cuda_kernels.hpp"
#include "names.hpp"

namespace pagoda::cuda {

namespace {

int64_t or_default(int64_t ld, int64_t packed) { return ld == 0 ? packed : ld; }

bool fits_int(int64_t v) { return v <= int64_t(INT_MAX); }

// Bytes from the first to one past the last element of a [rows, ld] matrix with `cols` used.
uint64_t span_bytes(int64_t rows, int64_t cols, int64_t ld) {
    if (rows == 0 || cols == 0) return 0;
    return uint64_t((rows - 1) * ld + cols) * sizeof(float);
}

bool overlaps(const void *a, uint64_t a_bytes, const void *b, uint64_t b_bytes) {
    if (a_bytes == 0 || b_bytes == 0) return false;
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace

pagoda_status_t check_matmul(CudaBackend &cuda, const pagoda_op_matmul_t &a) {
    if (a.flags & ~PAGODA_MATMUL_ACCUMULATE) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", unsigned(a.flags));
        return cuda.fail(PAGODA_ERR_UNSUPPORTED, std::string("matmul: unknown flags ") + hex);
    }
    if (a.w_dtype != PAGODA_DTYPE_F32 && a.w_dtype != PAGODA_DTYPE_BF16 &&
        a.w_dtype != PAGODA_DTYPE_F16)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         std::string("matmul: w_dtype ") + plugin::dtype_name(a.w_dtype) +
                             " is not a weight type (f32, bf16 or f16)");
    if (a.x_dtype != PAGODA_DTYPE_F32 || a.y_dtype != PAGODA_DTYPE_F32)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string("matmul: x_dtype ") + plugin::dtype_name(a.x_dtype) +
                             " / y_dtype " + plugin::dtype_name(a.y_dtype) +
                             ": only f32 activations are supported");
    if (a.w_dtype != PAGODA_DTYPE_F32)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string("matmul: w_dtype ") + plugin::dtype_name(a.w_dtype) +
                             " is not yet supported by the CUDA backend (f32 weights only)");
    if (a.m < 0 || a.n < 0 || a.k < 0)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         "matmul: negative size m=" + std::to_string(a.m) +
                             " n=" + std::to_string(a.n) + " k=" + std::to_string(a.k));
    const int64_t ldx = or_default(a.ldx, a.k), ldw = or_default(a.ldw, a.k),
                  ldy = or_default(a.ldy, a.n);
    if (ldx < a.k || ldw < a.k || ldy < a.n)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         "matmul: a row stride is shorter than its row (ldx=" + std::to_string(ldx) +
                             ", ldw=" + std::to_string(ldw) + ", ldy=" + std::to_string(ldy) +
                             " for k=" + std::to_string(a.k) + ", n=" + std::to_string(a.n) + ")");
    if (!fits_int(a.m) || !fits_int(a.n) || !fits_int(a.k) || !fits_int(ldx) ||
        !fits_int(ldw) || !fits_int(ldy))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         "matmul: a size or stride exceeds cuBLAS's 32-bit limit");
    return PAGODA_OK;
}

pagoda_status_t run_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_matmul_t &a) {
    if (a.m == 0 || a.n == 0) return PAGODA_OK;
    const int64_t ldx = or_default(a.ldx, a.k), ldw = or_default(a.ldw, a.k),
                  ldy = or_default(a.ldy, a.n);
    if (a.y == nullptr || (a.k > 0 && (a.x == nullptr || a.w == nullptr)))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "matmul: x, w or y is NULL");
    const uint64_t y_bytes = span_bytes(a.m, a.n, ldy);
    if (overlaps(a.y, y_bytes, a.x, span_bytes(a.m, a.k, ldx)) ||
        overlaps(a.y, y_bytes, a.w, span_bytes(a.n, a.k, ldw)))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "matmul: y overlaps x or w");
    if (pagoda_status_t s = cuda.use_device(stream.device); s != PAGODA_OK) return s;

    const bool accumulate = (a.flags & PAGODA_MATMUL_ACCUMULATE) != 0;
    if (a.k == 0) {
        // An empty sum: y is zero, or unchanged when accumulating. Done here rather than
        // relying on how cuBLAS treats k = 0.
        if (!accumulate) {
            cudaError_t e = cudaMemset2DAsync(a.y, size_t(ldy) * sizeof(float), 0,
                                              size_t(a.n) * sizeof(float), size_t(a.m),
                                              stream.stream);
            if (e != cudaSuccess) return cuda.fail_cuda(e, "matmul: cudaMemset2DAsync", stream.device);
        }
    } else {
        pagoda_status_t s = cuda.with_blas(stream.device, stream.stream, [&](cublasHandle_t h) {
            const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
            cublasStatus_t st = cublasGemmEx(
                h, CUBLAS_OP_T, CUBLAS_OP_N, int(a.n), int(a.m), int(a.k), &alpha, a.w,
                CUDA_R_32F, int(ldw), a.x, CUDA_R_32F, int(ldx), &beta, a.y, CUDA_R_32F, int(ldy),
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            if (st != CUBLAS_STATUS_SUCCESS)
                return cuda.fail_cublas(st,
                                        "matmul: cublasGemmEx (m=" + std::to_string(a.m) +
                                            ", n=" + std::to_string(a.n) +
                                            ", k=" + std::to_string(a.k) + ")",
                                        stream.device);
            return PAGODA_OK;
        });
        if (s != PAGODA_OK) return s;
    }
    if (a.bias != nullptr) {
        cudaError_t e = add_bias(static_cast<float *>(a.y), ldy, static_cast<const float *>(a.bias),
                                 a.m, a.n, stream.stream);
        if (e != cudaSuccess) return cuda.fail_cuda(e, "matmul: bias kernel launch", stream.device);
    }
    return PAGODA_OK;
}

}  // namespace pagoda::cuda
