// The decode-sized product y = x·Wᵀ (+bias) (+y) with bf16/f16 or quantized block W (Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K, decoded in registers), where the cost is streaming W from memory once; x and
// y may be f32, bf16 or f16 (widened on load, rounded once on store), the bias is f32, and every
// product and sum is f32; gemv_kernel.cu. Plain C++ so both nvcc and the host compiler read it.
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
    const void *w;  // BF16, F16 or a block type, as w_dtype says
    pagoda_dtype_t w_dtype;
    int64_t ldw;  // in values (a whole number of blocks for a block type)
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

// Whether launch_gemv takes W of `w_dtype` at `w`: bf16/f16 anywhere, block types whose data is
// aligned as their decoder loads it (block_decode.cuh: 2 bytes, 8 for Q4_K and Q5_K).
bool gemv_takes(pagoda_dtype_t w_dtype, const void *w);

// What a refusal of misaligned block data says (every kernel reading blocks has the rule).
inline constexpr const char *kBlockAlignmentRule =
    "the CUDA backend reads Q4_K and Q5_K blocks 8 bytes at a time, the others 2";

// Queues the product on `stream`. Returns the first launch error (cudaErrorInvalidValue where
// gemv_takes says no, or for an x_dtype or y_dtype other than F32, BF16 or F16).
cudaError_t launch_gemv(const GemvArgs &args, cudaStream_t stream);

}  // namespace pagoda::cuda
