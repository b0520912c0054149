// KV_WRITE's kernels: the slot check, the fused rotation of keys (k_rope) and the scatter of new
// keys and values into the paged caches; kv_write_kernel.cu. Plain C++ so both nvcc and the host
// compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

// ops.h's pagoda_op_kv_write_t with packed strides resolved (the caches in
// PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN, [num_blocks][n_kv_heads][block_size][head_dim]).
struct KvWriteArgs {
    pagoda_dtype_t cache_dtype;  // F32, BF16 or F16
    pagoda_dtype_t act_dtype;    // of k and v: F32, BF16 or F16 (0 resolved to F32)
    int64_t n_tokens;
    int64_t n_kv_heads;
    int64_t head_dim;
    int64_t block_size;
    int64_t num_blocks;
    const void *k;
    int64_t k_token_stride;
    const void *v;
    int64_t v_token_stride;
    void *k_cache;
    void *v_cache;
    const int64_t *slot_mapping;
    // ops.h's k_rope as read and checked by the backend (its own struct_size resolved), or
    // nullptr. Host memory, read by launch_kv_write only; its positions and freq_factors are
    // device addresses.
    const pagoda_op_rope_t *k_rope;
    DeviceError *error;
};

// Queues on `stream` a check of every slot (the lowest token whose slot is at or past
// num_blocks × block_size is reported through a.error, as the CPU backend words it) and then
// the write, which does nothing when the stream's error record is set: a bad slot changes no
// cache. Negative slots are padding and skipped. Keys and values are widened to f32 and rounded
// once (to nearest even) to the cache's type. With k_rope the keys' first rot_dim elements of every head are rotated on the way in,
// exactly as launch_rope would rotate them (rope_math.cuh), in f32 from the widened keys (the
// rope struct's own act_dtype plays no part), and `k` is left alone; a
// freq_factors entry that is not finite and positive is recorded in a.error
// (DeviceErrorField::RopeFreqFactor) and nothing is written. Returns the first launch error
// (cudaSuccess for zero tokens).
cudaError_t launch_kv_write(const KvWriteArgs &a, cudaStream_t stream);

}  // namespace pagoda::cuda
