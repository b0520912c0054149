#include "kv_write_kernel.hpp"

#include <climits>

#include "half_load.cuh"
#include "launch_shape.hpp"
#include "pagoda/ops.h"
#include "rope_math.cuh"

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

// The rotated part of the keys (k_rope): rope_kernel.cu's loop with the cache as destination.
// One block per token (grid-stride over tokens); the block builds inv_freq a chunk of pairs at a
// time in shared memory and each token's cos/sin once for all its heads. A thread rotates one
// pair of one head, so it reads both elements of the pair from `k` and writes both to the
// cache; `k` is only read (as A, widened). The elements past rot_dim are write_kernel's.
constexpr int kRotateThreads = 256;

template <typename T, typename A>
__global__ void __launch_bounds__(kRotateThreads)
    write_rotated_keys_kernel(KvWriteArgs a, const int32_t *positions, RopeFrequencies freq,
                              bool interleaved) {
    // Uniform over the block, as every barrier below needs: another block of this launch may
    // record a bad factor while this one starts.
    if (__syncthreads_or(threadIdx.x == 0 && failed(a.error))) return;
    __shared__ double inv_freq[kRopePairsPerChunk];
    __shared__ float cos_t[kRopePairsPerChunk], sin_t[kRopePairsPerChunk];
    __shared__ unsigned long long first_bad;
    if (!rope_freq_factors_valid(freq, a.error, int32_t(PAGODA_OP_KV_WRITE), first_bad)) return;

    T *k_cache = static_cast<T *>(a.k_cache);
    const int64_t pairs = freq.pairs;
    for (int64_t p0 = 0; p0 < pairs; p0 += kRopePairsPerChunk) {
        const int n = int(pairs - p0 < kRopePairsPerChunk ? pairs - p0 : kRopePairsPerChunk);
        // The previous chunk's last token is done with inv_freq before it is replaced.
        __syncthreads();
        for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
            inv_freq[i] = inverse_frequency(freq, p0 + i);
        for (int64_t t = blockIdx.x; t < a.n_tokens; t += gridDim.x) {
            // inv_freq is written, and the previous token's rotation is done with cos/sin.
            __syncthreads();
            const int64_t slot = a.slot_mapping[t];
            if (slot < 0) continue;  // padding: the same for the whole block
            const int32_t position = positions[t];
            for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
                rope_angle(position, inv_freq[i], cos_t[i], sin_t[i]);
            __syncthreads();
            const int64_t block = slot / a.block_size, offset = slot % a.block_size;
            const A *k = static_cast<const A *>(a.k) + t * a.k_token_stride;
            const int64_t work = a.n_kv_heads * n;
            for (int64_t e = threadIdx.x; e < work; e += blockDim.x) {
                const int64_t head = e / n;
                const int i = int(e - head * n);
                const A *src = k + head * a.head_dim;
                T *dst = k_cache +
                         ((block * a.n_kv_heads + head) * a.block_size + offset) * a.head_dim;
                // Half-split pairs i with i + rot_dim/2; interleaved pairs 2i with 2i + 1.
                const int64_t j0 = interleaved ? 2 * (p0 + i) : p0 + i;
                const int64_t j1 = interleaved ? j0 + 1 : j0 + pairs;
                float y0, y1;
                rotate_pair(load_as_float(src + j0), load_as_float(src + j1), cos_t[i], sin_t[i],
                            y0, y1);
                store_from_float(dst + j0, y0);
                store_from_float(dst + j1, y1);
            }
        }
    }
}

// A grid-stride loop over pieces of kVec elements of every (token, head) row, K and V
// together. A token's heads go to rows far apart in the cache (vLLM's "reshape and cache"),
// but each row is written contiguously, so stores coalesce within a row. Key elements below
// `k_from` (rot_dim with k_rope, else 0) are write_rotated_keys_kernel's and skipped; with
// kVec = 4, k_from is a multiple of 4, so a piece is either wholly skipped or wholly written.
// Keys and values are read as A and widened; each element is rounded once, to T.
template <typename T, typename A, int kVec>
__global__ void write_kernel(KvWriteArgs a, int64_t k_from) {
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
        const A *k = static_cast<const A *>(a.k) + t * a.k_token_stride + head * a.head_dim + d;
        const A *v = static_cast<const A *>(a.v) + t * a.v_token_stride + head * a.head_dim + d;
        const bool write_k = d >= k_from;
        if constexpr (kVec == 4) {
            // One load of 4 activations and one store of 4 cache elements (16 or 8 bytes).
            float x[4];
            if (write_k) {
                load_vec_as_float<4>(k, x);
                store_vec_from_float<4>(k_cache + dst, x);
            }
            load_vec_as_float<4>(v, x);
            store_vec_from_float<4>(v_cache + dst, x);
        } else {
            if (write_k) store_from_float(k_cache + dst, load_as_float(k));
            store_from_float(v_cache + dst, load_as_float(v));
        }
    }
}

bool aligned(const void *p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The rotation (with k_rope) and the write of activations A into a cache of T, after the slot
// check.
template <typename T, typename A>
cudaError_t launch_writes(const KvWriteArgs &a, cudaStream_t stream) {
    int64_t k_from = 0;
    if (a.k_rope != nullptr) {
        // First, so that a bad freq_factors entry is found before anything is written.
        const RopeFrequencies freq = rope_frequencies_of(*a.k_rope);
        k_from = freq.rot_dim;
        const int64_t chunk = freq.pairs < kRopePairsPerChunk ? freq.pairs : kRopePairsPerChunk;
        const int threads = row_block_threads(a.n_kv_heads * chunk, kRotateThreads);
        write_rotated_keys_kernel<T, A><<<grid_blocks(a.n_tokens, 1), threads, 0, stream>>>(
            a, a.k_rope->positions, freq, a.k_rope->layout == PAGODA_ROPE_INTERLEAVED);
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    // Four elements per thread when every row piece is aligned for it: 16- or 8-byte loads of
    // the inputs and 16- or 8-byte stores to the cache.
    const bool vec = a.head_dim % 4 == 0 && k_from % 4 == 0 && a.k_token_stride % 4 == 0 &&
                     a.v_token_stride % 4 == 0 && aligned(a.k, 4 * sizeof(A)) &&
                     aligned(a.v, 4 * sizeof(A)) && aligned(a.k_cache, 4 * sizeof(T)) &&
                     aligned(a.v_cache, 4 * sizeof(T));
    const int vec_elems = vec ? 4 : 1;
    constexpr int kThreads = 256;
    const int64_t pieces = a.n_tokens * a.n_kv_heads * (a.head_dim / vec_elems);
    const int64_t wanted = (pieces + kThreads - 1) / kThreads;
    const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
    if (vec)
        write_kernel<T, A, 4><<<blocks, kThreads, 0, stream>>>(a, k_from);
    else
        write_kernel<T, A, 1><<<blocks, kThreads, 0, stream>>>(a, k_from);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_kv_write(const KvWriteArgs &a, cudaStream_t stream) {
    if (a.n_tokens == 0) return cudaSuccess;
    (void)cudaGetLastError();  // so the errors read below are these launches'
    check_slots_kernel<<<1, kCheckThreads, 0, stream>>>(a.slot_mapping, a.n_tokens,
                                                        a.num_blocks * a.block_size, a.error);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;

    return with_storage_type(a.act_dtype, [&](auto act_tag) -> cudaError_t {
        return with_storage_type(a.cache_dtype, [&](auto cache_tag) -> cudaError_t {
            return launch_writes<typename decltype(cache_tag)::type,
                                 typename decltype(act_tag)::type>(a, stream);
        });
    });
}

}  // namespace pagoda::cuda
