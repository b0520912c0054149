// The GEMMs under the matmul routes (cuda_matmul.cpp): cuBLASLt with its algorithm choices
// cached per device, cublasGemmEx where cuBLASLt has none, and the per-device scratch the
// routes widen or stage into (a W panel, x and y rows), ordered across the device's streams.
// cuda_gemm.cpp.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cuda_backend.hpp"

namespace pagoda::cuda {

// f32 elements of the widened W panel: 64 MiB holds a whole 4096 × 4096 projection, so most
// GEMMs are one call, and an LM head takes a few. Allocated on first use, halved while the
// device refuses it.
constexpr int64_t kPanelElems = int64_t(1) << 24;
// f32 elements of the staged route's x and y rows: 32 MiB is hundreds of rows of a prefill
// (k + n = 18432 for Llama's FFN gives 455), so its GEMMs stay large. Allocated like the panel.
constexpr int64_t kStageElems = int64_t(1) << 23;

// One GEMM in cuBLAS's column-major terms: D[rows, cols] = op(A)ᵀ·B (+ bias) (+ C = D).
struct Gemm {
    cudaDataType_t ab_type;  // A and B
    cudaDataType_t d_type;   // C and D
    cublasComputeType_t compute;
    int64_t rows, cols, k;  // n, m, k of the matmul
    const void *a;
    int64_t lda;  // W: column-major [k, rows], transposed
    const void *b;
    int64_t ldb;  // x: column-major [k, cols]
    void *d;
    int64_t ldd;       // y: column-major [rows, cols]
    const float *bias;  // [rows], or nullptr; only with an f32 D
    bool accumulate;
};

// What a cuBLASLt algorithm choice depends on: types, shape, strides, epilogue, alignments.
using PlanKey = std::array<int64_t, 14>;

struct PlanKeyHash {
    size_t operator()(const PlanKey &key) const noexcept {
        uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
        for (int64_t v : key) {
            h ^= uint64_t(v);
            h *= 1099511628211ull;
        }
        return size_t(h);
    }
};

struct Plan {
    bool found = false;  // false: cuBLASLt has no algorithm; use cublasGemmEx
    cublasLtMatmulAlgo_t algo{};
};

// A device buffer of f32 scratch: the widened W panel, or the staged route's rows.
struct ScratchArea {
    const char *what;  // "f32 weight panel", for messages
    int64_t preferred_elems;
    float *data = nullptr;
    int64_t elems = 0;
};

// Per device, under the device's lock (CudaBackend::with_matmul).
struct MatmulState {
    int32_t device = 0;
    cublasLtHandle_t lt = nullptr;
    void *workspace = nullptr;
    size_t workspace_bytes = 0;
    ScratchArea panel{"f32 weight panel", kPanelElems};
    ScratchArea stage{"f32 staging of half activations", kStageElems};
    // The workspace, panel and stage are shared by every stream of the device. Each user makes
    // its stream wait for this event, then records it after its last use, so users on different
    // streams run their scratch work in the order they were queued.
    cudaEvent_t scratch_free = nullptr;
    std::unordered_map<PlanKey, Plan, PlanKeyHash> plans;
    // A graph has recorded a launch using the workspace or scratch areas, and keeps their
    // addresses: an outgrown area is then kept (here) rather than freed, until the backend goes.
    bool recorded = false;
    std::vector<float *> retired_areas;
};

// The cuBLAS type of an f32, bf16 or f16 operand.
cudaDataType_t cuda_type(pagoda_dtype_t d);

// f32 compute, or TF32 where the host's config allowed it.
cublasComputeType_t f32_compute(const CudaBackend &cuda);

// Makes the device's matmul state: the cuBLASLt handle, its workspace, the scratch event.
pagoda_status_t make_state(CudaBackend &cuda, int32_t device, MatmulStatePtr &out);

// Makes sure `area` (the state's panel or stage) holds at least `min_elems` floats (at most
// its preferred size), preferring that size and halving while the device refuses. The caller
// holds the scratch.
pagoda_status_t ensure_area(CudaBackend &cuda, MatmulState &s, pagoda_backend_stream_t &stream,
                            ScratchArea &area, int64_t min_elems);

// One GEMM: cuBLASLt, or cublasGemmEx where cuBLASLt has no algorithm. The caller holds the
// scratch (the workspace is used here).
pagoda_status_t gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s, cudaStream_t stream,
                     const Gemm &g, pagoda_dtype_t y_dtype);

// Runs `body` with the calling thread allowed to allocate while one of its streams records a
// graph: the device state made this way is real memory, not part of the recording.
template <typename Body>
auto outside_capture(Body &&body) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    auto result = body();
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return result;
}

// Runs `body(blas, state)` holding the device's matmul state and its scratch: the state is made
// on first use, and `stream` is ordered after every earlier scratch user of any stream.
template <typename Body>
pagoda_status_t with_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream, Body &&body) {
    return cuda.with_matmul(stream.device, stream.stream,
                            [&](cublasHandle_t blas, MatmulStatePtr &state) {
        if (state == nullptr) {
            if (pagoda_status_t r = outside_capture([&] { return make_state(cuda, stream.device, state); });
                r != PAGODA_OK)
                return r;
            // cublasGemmEx (the fallback) otherwise allocates its own workspace on first use,
            // which a recording stream cannot do; the two libraries run in turn on this one.
            if (state->workspace != nullptr) {
                if (cublasStatus_t st =
                        cublasSetWorkspace(blas, state->workspace, state->workspace_bytes);
                    st != CUBLAS_STATUS_SUCCESS)
                    return cuda.fail_cublas(st, "matmul: cublasSetWorkspace",
                                            stream.device);
            }
        }
        if (stream.capturing) {
            // The event cannot join a recording (waiting on it would tie the graph to work
            // outside it; recording it would make it the graph's). graph_launch orders the
            // whole graph with the scratch instead (order_with_matmul_scratch).
            state->recorded = true;
            return body(blas, *state);
        }
        if (cudaError_t e = cudaStreamWaitEvent(stream.stream, state->scratch_free, 0);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "matmul: cudaStreamWaitEvent", stream.device);
        pagoda_status_t r = body(blas, *state);
        // Recorded even after a failure: whatever was queued before it may still use the scratch.
        if (cudaError_t e = cudaEventRecord(state->scratch_free, stream.stream);
            e != cudaSuccess && r == PAGODA_OK)
            r = cuda.fail_cuda(e, "matmul: cudaEventRecord", stream.device);
        return r;
    });
}

}  // namespace pagoda::cuda
