// The mixture-of-experts kernels (ABI 1.8). MOE_ROUTE: one block per token (moe_route_kernel.cu).
// MOE_MATMUL (moe_matmul_kernel.cu), a chunk of tokens at a time in three launches: the chunk's
// slots bucketed by expert on the device (no host sync: the ids are device data), one tiled
// product per held expert over all of its gathered rows (its matrix read once per 32 rows, not
// once per token) into an f32 row per slot, then y's rows from those: a row per slot, or the
// weighted sum of a token's slots, rounded once. Plain C++ so both nvcc and the host compiler
// read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

struct MoeRouteArgs {
    int64_t n_tokens, n_experts, top_k;  // checked: n_experts ≤ 1024, top_k ≤ 64
    bool normalise;                      // PAGODA_MOE_SOFTMAX_TOPK_NORM
    const float *logits;
    int32_t *expert_ids;
    float *weights;
    DeviceError *error;  // the stream's record: a NaN logit is reported there
};

cudaError_t launch_moe_route(const MoeRouteArgs &a, cudaStream_t stream);

// One chunk of a checked MOE_MATMUL, strides resolved: x, expert_ids, weights and y already
// point at the chunk's first token (its first slot's row where rows are per slot).
struct MoeChunkArgs {
    int64_t n_tokens;  // in the chunk
    int64_t top_k, n_experts, expert_offset, n, k;
    const void *x;
    pagoda_dtype_t x_dtype;
    int64_t ldx;
    bool x_per_slot;
    const void *const *experts;  // device array
    pagoda_dtype_t w_dtype;
    int64_t ldw;
    const int32_t *expert_ids;
    int64_t first_slot;  // the chunk's first slot in the launch, for the error record
    const float *weights;  // or nullptr
    void *y;
    pagoda_dtype_t y_dtype;
    int64_t ldy;
    DeviceError *error;
};

// The chunk's device scratch (in the stream's scratch): the buckets and an f32 row per slot.
struct MoeScratch {
    int32_t *starts;    // [n_experts + 1]: expert h's slots are order[starts[h], starts[h + 1])
    int32_t *cursor;    // [n_experts]
    int32_t *order;     // [slots]: chunk slots grouped by expert
    float *products;    // [slots, n]
};

// Bytes of scratch for a chunk of `slots` slots, and the areas laid out in `base` (256-byte
// aligned, as stream scratch is).
size_t moe_scratch_bytes(int64_t n_experts, int64_t slots, int64_t n);
MoeScratch moe_scratch_at(void *base, int64_t n_experts, int64_t slots);

// Queues the chunk's three kernels. cudaErrorInvalidValue for a type outside ops.h's.
cudaError_t launch_moe_chunk(const MoeChunkArgs &a, const MoeScratch &s, cudaStream_t stream);

}  // namespace pagoda::cuda
