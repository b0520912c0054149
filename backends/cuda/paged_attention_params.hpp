// What the paged-attention kernels share: the op's arguments as the kernels read them and the
// device-side plan of one launch. Plain C++ so both nvcc and the host compiler read it.
//
// The batch (query offsets, context lengths, block tables) lives in device memory, so the host
// cannot see the chunk lengths without a synchronisation. One launch therefore queues:
//  1. plan_paged_attention (paged_attention_batch.cu): checks query_start and context_lens,
//     sends each sequence to the decode or the prefill kernel by its chunk length, and lays out
//     the prefill kernel's work;
//  2. the decode kernel (paged_attention_decode.cu) over sequences with at most
//     kDecodeMaxQueries query tokens, split-K over the context, and the log-sum-exp merge of
//     its partitions (attention_merge.cu) when it split;
//  3. the prefill kernel (paged_attention_prefill.cu) over the longer chunks.
// Each kernel skips the other's sequences, so one launch serves a mixed continuous batch.
#pragma once

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// Sequences with at most this many query tokens (decode, short speculative chunks) go to the
// split-K decode kernel; longer chunks to the prefill kernel.
inline constexpr int32_t kDecodeMaxQueries = 4;
// Query rows ((token, head of the GQA group) pairs) per block of the prefill kernel.
inline constexpr int32_t kPrefillRows = 32;
// Query rows per block of the decode kernel.
inline constexpr int32_t kDecodeRows = 8;
// The largest head_dim the kernels' register tiles hold.
inline constexpr int64_t kMaxAttentionHeadDim = 256;

// ops.h's pagoda_op_paged_attention_t with packed strides resolved. Counts that index blocks
// and heads are narrowed after the host checked they fit (cuda_paged.cpp).
struct PagedAttentionArgs {
    pagoda_dtype_t cache_dtype;
    // Of q and out: F32, BF16 or F16 (0 resolved to F32). Read and written through a run-time
    // switch: q is loaded once per work item and out written once, so a template parameter
    // would triple the kernels' instantiations for nothing measurable.
    pagoda_dtype_t act_dtype;
    bool causal;
    // Whether every K/V row starts on 16 bytes (head_dim's bytes and the caches' bases), so
    // the kernels load rows in 16-byte vectors.
    bool vector_rows;
    int32_t n_seqs;
    int32_t n_q_heads;
    int32_t n_kv_heads;
    int32_t group;  // n_q_heads / n_kv_heads
    int32_t head_dim;
    int32_t block_size;
    int32_t sliding_window;  // 0 = unlimited
    int64_t num_blocks;
    int64_t max_blocks_per_seq;
    // Largest context any sequence may have: max_blocks_per_seq × block_size, or
    // max_context_len when that is set and smaller.
    int64_t context_limit;
    float scale;
    // Nonzero: each scaled score s becomes softcap · tanh(s / softcap) (ABI 1.8); 0 = off.
    float softcap;
    const void *q;
    int64_t q_token_stride;
    const void *k_cache;
    const void *v_cache;
    const int32_t *block_tables;
    const int32_t *context_lens;
    const int32_t *query_start;
    void *out;
    int64_t out_token_stride;
    DeviceError *error;
};

// The device-side plan one launch builds in the stream's scratch (cuda_paged.cpp lays it out).
struct PagedAttentionPlan {
    // [n_seqs + 1]: prefill_tile_start[s] is the first of sequence s's row tiles of
    // kPrefillRows rows in the prefill kernel's work (0 tiles for decode sequences); the last
    // entry is the total. The prefill kernel's work items are (tile, KV head) pairs.
    int64_t *prefill_tile_start;
    // The prefill kernel's next work item, taken by atomicAdd; the plan zeroes it.
    unsigned long long *prefill_next_item;
    // [n_seqs × kDecodeMaxQueries]: for decode slot (s, i), the query token it writes (the row
    // of q and out), or -1 when sequence s has no token i or is not a decode sequence. Only
    // when the decode kernel splits; NULL otherwise.
    int32_t *decode_token_rows;
    // The decode kernel's split-K: partitions of `partition` keys (a multiple of 32) and
    // `n_partitions` of them per sequence at most. With one partition the decode kernel writes
    // `out` directly and the partials are unused.
    int32_t partition;
    int32_t n_partitions;
    // When split: partition p's normalised output (f32, whatever act_dtype is: only the
    // merged result is rounded) for decode slot t, head h is at
    // partial_out[((p·n_slots + t)·n_q_heads + h)·head_dim], its log-sum-exp at
    // partial_lse[(p·n_slots + t)·n_q_heads + h], with n_slots = n_seqs × kDecodeMaxQueries.
    float *partial_out;
    float *partial_lse;
};

// Visible keys of query `i` of a chunk of `q_len` tokens with `context_len` cached (ops.h):
// it sits at position context_len − q_len + i; causal queries see keys up to their own
// position, others the whole context; a sliding window hides keys more than
// sliding_window − 1 positions behind it. Never empty for a valid batch.
struct KeyRange {
    int32_t first;
    int32_t last;  // inclusive
};

#ifdef __CUDACC__
#define PAGODA_HOST_DEVICE __host__ __device__
#else
#define PAGODA_HOST_DEVICE
#endif

PAGODA_HOST_DEVICE inline KeyRange visible_keys(const PagedAttentionArgs &a, int32_t context_len,
                                                int32_t q_len, int32_t i) {
    const int32_t pos = context_len - q_len + i;
    KeyRange keys;
    keys.last = a.causal ? pos : context_len - 1;
    keys.first = 0;
    if (a.sliding_window > 0 && pos - a.sliding_window + 1 > 0) keys.first = pos - a.sliding_window + 1;
    return keys;
}

#undef PAGODA_HOST_DEVICE

}  // namespace pagoda::cuda
