// The tile loop both paged-attention kernels are built on: a block of kWarps warps holds a tile
// of query rows and walks the keys in tiles of 32 read straight from the paged blocks into
// shared memory, keeping an online softmax per row (FlashAttention-2, Dao 2023, Algorithm 1,
// with f32 scores and accumulators as ops.h requires: no half-precision tensor-core products).
// Scores are soft-capped (ABI 1.8's softcap) as they are formed, before the softmax sees them.
// Queries of any act_dtype are widened into the shared Q tile; callers round the outputs.
//
// Query rows: with GQA the query heads sharing a KV head are packed as rows of one tile, row r
// of a (sequence, KV head) being token r / group and head kv_head·group + r % group, so each
// K/V tile loaded serves the whole group (FlashInfer's and FA3's "GQA packing").
//
// Within a warp: for the scores lane j owns key j of the tile (one 16-byte shared load of K
// feeds R rows); for P·V lane l owns columns l, l + 32, … of the output (conflict-free shared
// loads of V), getting each probability from its key's lane by a shuffle. The row max and sum
// are warp reductions. CUDA-only (.cu files).
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>

#include "device_error.hpp"
#include "half_load.cuh"
#include "paged_attention_params.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda::attention {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kKeyTile = 32;  // the warp size: lane j scores key j
inline constexpr unsigned kFullMask = 0xffffffffu;

// head_dim rounded up to 32 (the columns the dot-product loop reads; the tail is zero).
__host__ __device__ constexpr int rounded_dim(int head_dim) { return (head_dim + 31) / 32 * 32; }
// Row stride in floats of the shared Q, K and V tiles: four more than rounded_dim, so the 8
// rows that a quarter-warp reads with one 16-byte load each start in different banks.
__host__ __device__ constexpr int padded_dim(int head_dim) { return rounded_dim(head_dim) + 4; }
// Dynamic shared memory of a block with `rows` query rows.
__host__ __device__ constexpr size_t shared_bytes(int rows, int head_dim) {
    return size_t(rows + 2 * kKeyTile) * size_t(padded_dim(head_dim)) * sizeof(float);
}

// The lanes of a warp hold one value each; all get the max (sum).
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

// One sequence of the batch as the kernels read it (the batch was checked by the plan).
struct SeqView {
    int32_t seq;
    int32_t q_len;
    int32_t context_len;
    int64_t q_begin;        // its first query token: the row of q and out
    const int32_t *table;   // its row of block_tables
};

__device__ __forceinline__ SeqView seq_view(const PagedAttentionArgs &a, int32_t s) {
    SeqView v;
    v.seq = s;
    v.q_begin = a.query_start[s];
    v.q_len = a.query_start[s + 1] - a.query_start[s];
    v.context_len = a.context_lens[s];
    v.table = a.block_tables + int64_t(s) * a.max_blocks_per_seq;
    return v;
}

// Element offset in either cache of the row of `key` for `kv_head`, or -1 when the key lies
// outside [key_begin, key_end) or its block id is not a block of the cache; a bad id is
// reported (every visible block is read by some block of the launch, so every bad visible id
// is found) and its rows read as zeros, so nothing outside the caches is touched.
__device__ __forceinline__ int64_t cache_row(const PagedAttentionArgs &a, const SeqView &seq,
                                             int32_t kv_head, int32_t key, int32_t key_begin,
                                             int32_t key_end) {
    if (key < key_begin || key >= key_end) return -1;
    const int32_t index = key / a.block_size;
    const int32_t id = seq.table[index];
    if (id < 0 || id >= a.num_blocks) {
        report(a.error, PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionBlock,
               int64_t(seq.seq) * a.max_blocks_per_seq + index, id, a.num_blocks);
        return -1;
    }
    return ((int64_t(id) * a.n_kv_heads + kv_head) * a.block_size + key % a.block_size) *
           a.head_dim;
}

// Block-wide: K and V of keys t0 … t0 + 31 into the shared tiles as f32 (zeros for keys
// outside [key_begin, key_end)). Consecutive threads read consecutive 16-byte pieces of a row,
// and a block's rows for one head are contiguous, so the loads coalesce.
template <typename T>
__device__ void load_kv_tile(const PagedAttentionArgs &a, const SeqView &seq, int32_t kv_head,
                             int32_t t0, int32_t key_begin, int32_t key_end, float *k_tile,
                             float *v_tile) {
    const int head_dim = a.head_dim, stride = padded_dim(head_dim);
    const T *k_cache = static_cast<const T *>(a.k_cache);
    const T *v_cache = static_cast<const T *>(a.v_cache);
    if (a.vector_rows) {
        constexpr int kVec = kVec16Elems<T>;
        const int per_row = head_dim / kVec;
        for (int idx = threadIdx.x; idx < kKeyTile * per_row; idx += kThreads) {
            const int j = idx / per_row, col = (idx % per_row) * kVec;
            const int64_t row = cache_row(a, seq, kv_head, t0 + j, key_begin, key_end);
            float k[kVec], v[kVec];
            if (row >= 0) {
                load_vec_as_float<kVec>(k_cache + row + col, k);
                load_vec_as_float<kVec>(v_cache + row + col, v);
            } else {
#pragma unroll
                for (int e = 0; e < kVec; ++e) k[e] = v[e] = 0.0f;
            }
            // col is a multiple of 4 and so is the stride: 16-byte aligned shared stores.
            float4 *kd = reinterpret_cast<float4 *>(k_tile + j * stride + col);
            float4 *vd = reinterpret_cast<float4 *>(v_tile + j * stride + col);
#pragma unroll
            for (int e = 0; e < kVec / 4; ++e) {
                kd[e] = make_float4(k[4 * e], k[4 * e + 1], k[4 * e + 2], k[4 * e + 3]);
                vd[e] = make_float4(v[4 * e], v[4 * e + 1], v[4 * e + 2], v[4 * e + 3]);
            }
        }
    } else {
        for (int idx = threadIdx.x; idx < kKeyTile * head_dim; idx += kThreads) {
            const int j = idx / head_dim, d = idx % head_dim;
            const int64_t row = cache_row(a, seq, kv_head, t0 + j, key_begin, key_end);
            k_tile[j * stride + d] = row >= 0 ? load_as_float(k_cache + row + d) : 0.0f;
            v_tile[j * stride + d] = row >= 0 ? load_as_float(v_cache + row + d) : 0.0f;
        }
    }
}

// A warp's R query rows: their visible keys and online-softmax state. Every lane holds the same
// first/last/m/l; lane l holds columns l + 32·c of acc.
template <int R, int C>
struct RowState {
    int32_t first[R];  // visible keys [first, last]; first > last for a row past the chunk
    int32_t last[R];
    float m[R];        // running max of the scores (−∞ before any visible key)
    float l[R];        // running Σ exp(score − m)
    float acc[R][C];   // running Σ exp(score − m)·v
};

// Block-wide (every thread calls it): the block's kWarps·R query rows starting at `row0` of
// (`seq`, `kv_head`) attend to the keys in [key_begin, key_end) that each row can see. Warp w
// owns rows row0 + w·R … row0 + w·R + R − 1. `shared` holds shared_bytes(kWarps·R, head_dim).
// C·32 must cover head_dim.
template <typename T, int R, int C>
__device__ void attend(const PagedAttentionArgs &a, const SeqView &seq, int32_t kv_head,
                       int64_t row0, int32_t key_begin, int32_t key_end, float *shared,
                       RowState<R, C> &st) {
    constexpr int kBlockRows = kWarps * R;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int head_dim = a.head_dim, stride = padded_dim(head_dim);
    const int dim32 = rounded_dim(head_dim), tail = dim32 - head_dim;
    const int64_t n_rows = int64_t(seq.q_len) * a.group;
    float *q_tile = shared;
    float *k_tile = q_tile + kBlockRows * stride;
    float *v_tile = k_tile + kKeyTile * stride;

    // The keys any of the warp's rows can see; empty (first > last) when none can.
    int32_t warp_first = INT32_MAX, warp_last = INT32_MIN;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int64_t row = row0 + warp * R + r;
        st.first[r] = 1;
        st.last[r] = 0;
        if (row < n_rows) {
            const KeyRange keys =
                visible_keys(a, seq.context_len, seq.q_len, int32_t(row / a.group));
            st.first[r] = keys.first > key_begin ? keys.first : key_begin;
            st.last[r] = keys.last < key_end - 1 ? keys.last : key_end - 1;
            if (st.first[r] <= st.last[r]) {
                warp_first = min(warp_first, st.first[r]);
                warp_last = max(warp_last, st.last[r]);
            }
        }
        st.m[r] = -CUDART_INF_F;
        st.l[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < C; ++c) st.acc[r][c] = 0.0f;
    }

    if (key_begin >= key_end) return;  // an empty partition: block-uniform, before any barrier

    // The block's query rows, zero past head_dim and past the chunk. Callers reach here after a
    // barrier that ended every read of the previous use of these tiles.
    for (int idx = threadIdx.x; idx < kBlockRows * dim32; idx += kThreads) {
        const int r = idx / dim32, d = idx % dim32;
        const int64_t row = row0 + r;
        float value = 0.0f;
        if (row < n_rows && d < head_dim) {
            const int64_t token = seq.q_begin + row / a.group;
            const int64_t head = int64_t(kv_head) * a.group + row % a.group;
            value = load_as_float(a.q, a.act_dtype,
                                  token * a.q_token_stride + head * head_dim + d);
        }
        q_tile[r * stride + d] = value;
    }
    // The K and V columns past head_dim are never loaded: zero them once, so the dot products
    // over dim32 columns read 0 × 0 there.
    for (int idx = threadIdx.x; idx < kKeyTile * tail; idx += kThreads) {
        const int j = idx / tail, d = head_dim + idx % tail;
        k_tile[j * stride + d] = 0.0f;
        v_tile[j * stride + d] = 0.0f;
    }

    const float *q_rows = q_tile + warp * R * stride;
    // 64-bit so that the step past the last tile cannot overflow; every tile start fits int32.
    for (int64_t tile = key_begin / kKeyTile * kKeyTile; tile < key_end; tile += kKeyTile) {
        const int32_t t0 = int32_t(tile);
        __syncthreads();  // the previous tile's readers are done (and the Q tile is written)
        load_kv_tile<T>(a, seq, kv_head, t0, key_begin, key_end, k_tile, v_tile);
        __syncthreads();
        // A tile that none of the warp's rows can see (causal future, behind the window).
        if (warp_first > tile + kKeyTile - 1 || warp_last < t0) continue;

        // Scores: lane j against key t0 + j.
        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
        const float4 *k4 = reinterpret_cast<const float4 *>(k_tile + lane * stride);
        for (int d4 = 0; d4 < dim32 / 4; ++d4) {
            const float4 k = k4[d4];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const float4 q = reinterpret_cast<const float4 *>(q_rows + r * stride)[d4];
                s[r] = fmaf(q.x, k.x, s[r]);
                s[r] = fmaf(q.y, k.y, s[r]);
                s[r] = fmaf(q.z, k.z, s[r]);
                s[r] = fmaf(q.w, k.w, s[r]);
            }
        }

        // Online softmax step (Milakov & Gimelshein 2018): raise the max, rescale what was
        // summed so far by exp(m_old − m_new), and turn the scores into weights.
        const int32_t key = t0 + lane;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const bool visible = key >= st.first[r] && key <= st.last[r];
            float score = -CUDART_INF_F;
            if (visible) {
                score = s[r] * a.scale;
                // Soft-capping (ABI 1.8) comes before the max, so m, l, the weights and the
                // decode kernel's partial log-sum-exps are all over capped scores.
                if (a.softcap != 0.0f) score = a.softcap * tanhf(score / a.softcap);
            }
            const float m_new = fmaxf(st.m[r], warp_max(score));
            float p = 0.0f, correction = 1.0f;
            if (m_new != -CUDART_INF_F) {  // else nothing visible yet: keep the empty state
                p = visible ? expf(score - m_new) : 0.0f;
                correction = expf(st.m[r] - m_new);  // exp(−∞) = 0 on the first visible tile
            }
            st.l[r] = st.l[r] * correction + warp_sum(p);
#pragma unroll
            for (int c = 0; c < C; ++c) st.acc[r][c] *= correction;
            st.m[r] = m_new;
            s[r] = p;
        }

        // acc += P·V: lane l takes key j's weight from lane j and V's row j at its columns.
#pragma unroll 4
        for (int j = 0; j < kKeyTile; ++j) {
            float p[R];
#pragma unroll
            for (int r = 0; r < R; ++r) p[r] = __shfl_sync(kFullMask, s[r], j);
            const float *v_row = v_tile + j * stride + lane;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (c * 32 >= head_dim) break;  // uniform: columns past dim32 are not in the row
                const float v = v_row[32 * c];
#pragma unroll
                for (int r = 0; r < R; ++r) st.acc[r][c] = fmaf(p[r], v, st.acc[r][c]);
            }
        }
    }
}

// Whether an earlier launch on the stream found an error: the same answer for every thread of
// the block (a record claimed while the block starts could otherwise split it).
__device__ __forceinline__ bool block_failed(const DeviceError *error) {
    return __syncthreads_or(threadIdx.x == 0 && failed(error)) != 0;
}

}  // namespace pagoda::cuda::attention
