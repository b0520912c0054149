#include "kv_write_kernel.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>

#include "half_load.cuh"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

// One block scans the slots in order, a chunk of kCheckThreads at a time, and stops at the
// first chunk holding a bad slot, reporting its lowest token: the message names the token the
// CPU backend's sequential check would. A step's slot mapping is a few thousand entries.
constexpr int kCheckThreads = 1024;

__global__ void __launch_bounds__(kCheckThreads)
    check_slots_kernel(const int64_t *slot_mapping, int64_t n_tokens, int64_t n_slots,
                       DeviceError *error) {
    __shared__ int first_bad;
    if (__syncthreads_or(threadIdx.x == 0 && failed(error))) return;
    for (int64_t base = 0; base < n_tokens; base += kCheckThreads) {
        const int64_t t = base + threadIdx.x;
        const int64_t slot = t < n_tokens ? slot_mapping[t] : -1;
        const bool bad = slot >= n_slots;  // negative slots are padding
        if (!__syncthreads_or(bad)) continue;
        if (threadIdx.x == 0) first_bad = INT_MAX;
        __syncthreads();
        if (bad) atomicMin(&first_bad, int(threadIdx.x));
        __syncthreads();
        if (int(threadIdx.x) == first_bad)
            report(error, PAGODA_OP_KV_WRITE, DeviceErrorField::KvWriteSlot, t, slot, n_slots);
        return;  // uniform: every thread saw the same __syncthreads_or
    }
}

// f32 → cache element, rounding to nearest even.
__device__ __forceinline__ void store_as(float *dst, float v) { *dst = v; }
__device__ __forceinline__ void store_as(__nv_bfloat16 *dst, float v) { *dst = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store_as(__half *dst, float v) { *dst = __float2half_rn(v); }

// Four consecutive elements in one store (16 bytes of f32, 8 of bf16/f16).
__device__ __forceinline__ void store4_as(float *dst, float4 v) {
    *reinterpret_cast<float4 *>(dst) = v;
}
__device__ __forceinline__ void store4_as(__nv_bfloat16 *dst, float4 v) {
    __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 packed;
    packed.x = *reinterpret_cast<const unsigned *>(&lo);
    packed.y = *reinterpret_cast<const unsigned *>(&hi);
    *reinterpret_cast<uint2 *>(dst) = packed;
}
__device__ __forceinline__ void store4_as(__half *dst, float4 v) {
    __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
    uint2 packed;
    packed.x = *reinterpret_cast<const unsigned *>(&lo);
    packed.y = *reinterpret_cast<const unsigned *>(&hi);
    *reinterpret_cast<uint2 *>(dst) = packed;
}

// A grid-stride loop over pieces of kVec elements of every (token, head) row, K and V
// together. A token's heads go to rows far apart in the cache (vLLM's "reshape and cache"),
// but each row is written contiguously, so stores coalesce within a row.
template <typename T, int kVec>
__global__ void write_kernel(KvWriteArgs a) {
    if (failed(a.error)) return;  // set before this kernel started: the same for every thread
    T *k_cache = static_cast<T *>(a.k_cache);
    T *v_cache = static_cast<T *>(a.v_cache);
    const int64_t per_row = a.head_dim / kVec;
    const int64_t per_token = a.n_kv_heads * per_row;
    const int64_t total = a.n_tokens * per_token;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t t = e / per_token, rest = e % per_token;
        const int64_t slot = a.slot_mapping[t];
        if (slot < 0) continue;  // padding
        const int64_t head = rest / per_row, d = (rest % per_row) * kVec;
        const int64_t block = slot / a.block_size, offset = slot % a.block_size;
        const int64_t dst = ((block * a.n_kv_heads + head) * a.block_size + offset) * a.head_dim + d;
        const float *k = a.k + t * a.k_token_stride + head * a.head_dim + d;
        const float *v = a.v + t * a.v_token_stride + head * a.head_dim + d;
        if constexpr (kVec == 4) {
            store4_as(k_cache + dst, *reinterpret_cast<const float4 *>(k));
            store4_as(v_cache + dst, *reinterpret_cast<const float4 *>(v));
        } else {
            store_as(k_cache + dst, *k);
            store_as(v_cache + dst, *v);
        }
    }
}

bool aligned(const void *p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

cudaError_t launch_kv_write(const KvWriteArgs &a, cudaStream_t stream) {
    if (a.n_tokens == 0) return cudaSuccess;
    (void)cudaGetLastError();  // so the errors read below are these launches'
    check_slots_kernel<<<1, kCheckThreads, 0, stream>>>(a.slot_mapping, a.n_tokens,
                                                        a.num_blocks * a.block_size, a.error);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;

    return with_storage_type(a.cache_dtype, [&](auto tag) -> cudaError_t {
        using T = typename decltype(tag)::type;
        // Four elements per thread when every row piece is aligned for it: 16-byte loads of
        // the f32 inputs and 16- or 8-byte stores to the cache.
        const bool vec = a.head_dim % 4 == 0 && a.k_token_stride % 4 == 0 &&
                         a.v_token_stride % 4 == 0 && aligned(a.k, 16) && aligned(a.v, 16) &&
                         aligned(a.k_cache, 4 * sizeof(T)) && aligned(a.v_cache, 4 * sizeof(T));
        const int vec_elems = vec ? 4 : 1;
        constexpr int kThreads = 256;
        const int64_t pieces = a.n_tokens * a.n_kv_heads * (a.head_dim / vec_elems);
        const int64_t wanted = (pieces + kThreads - 1) / kThreads;
        const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
        if (vec)
            write_kernel<T, 4><<<blocks, kThreads, 0, stream>>>(a);
        else
            write_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a);
        return cudaGetLastError();
    });
}

}  // namespace pagoda::cuda
