// The decode-sized product y = x·Wᵀ (+bias) (+y) with bf16/f16 W, where the cost is streaming W
// from memory once; x and y may be f32, bf16 or f16 (widened on load, rounded once on store),
// the bias is f32; gemv_kernel.cu. Plain C++ so both nvcc and the host
// compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// A checked matmul with its strides resolved (never 0).
struct GemvArgs {
    int64_t m, n, k;
    const void *x;  // F32, BF16 or F16, as x_dtype says
    pagoda_dtype_t x_dtype;
    int64_t ldx;
    const void *w;  // BF16 or F16, as w_dtype says
    pagoda_dtype_t w_dtype;
    int64_t ldw;
    const float *bias;  // [n], or nullptr
    void *y;  // F32, BF16 or F16, as y_dtype says
    pagoda_dtype_t y_dtype;
    int64_t ldy;
    bool accumulate;
    // The stream's record (device_error.hpp): after an earlier op on the stream failed, the
    // launch changes nothing. May be nullptr.
    const DeviceError *error;
};

// The x rows one pass over W serves; launch_gemv takes any m, in passes of this many rows, but
// each further pass reads W again, so larger m belongs to a GEMM.
inline constexpr int64_t kGemvRowsPerPass = 8;

// Queues the product on `stream`. Returns the first launch error (cudaErrorInvalidValue for a
// w_dtype other than BF16 or F16, or an x_dtype or y_dtype other than F32, BF16 or F16).
cudaError_t launch_gemv(const GemvArgs &args, cudaStream_t stream);

}  // namespace pagoda::cuda
