// The inner loops of paged attention: one GQA group of query heads against a run of contiguous
// cache rows (one KV head's consecutive tokens within a block). paged_attention.cpp walks the
// block table and calls these; the portable versions are in paged_attention_rows.cpp, the AVX2
// ones in paged_attention_avx2.cpp.
//
// A group is `n_heads` query rows of `head_dim` f32 values, stored one after another; scores are
// `[n_heads][ld]` with key j of the current tile in column j.
#pragma once

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

// Cache rows a kernel prefetches while it works: `bytes` bytes at `next`, a run of rows the
// caller reads a little later. Consecutive runs sit in blocks scattered through the cache, so
// the hardware prefetcher cannot find the next one. A kernel touches the line at `next + o` as it
// reads byte `o` of its own run, which spreads the prefetches over its work and keeps the
// rows arriving a fixed distance ahead of use. `bytes = 0` prefetches nothing.
struct RowPrefetch {
    const void *next;
    int64_t bytes;
};

struct AttentionRowKernels {
    // scores[r·ld + j] = scale · (q_r · k_j) for the `n` cache rows k_j starting at `k`.
    void (*scores)(const float *q, int64_t n_heads, int64_t head_dim, const void *k,
                   pagoda_dtype_t dtype, int64_t n, float scale, float *scores, int64_t ld,
                   RowPrefetch prefetch);

    // One online-softmax step over a tile of `n` scores per head (Milakov & Gimelshein 2018,
    // "Online normalizer calculation for softmax"): raises the running max m[r], rescales the
    // running sum l[r] and the accumulator row acc_r by exp(m_old − m_new), and replaces the
    // scores with the weights exp(s − m_new), adding them to l[r].
    void (*softmax_tile)(float *scores, int64_t ld, int64_t n_heads, int64_t n, float *m, float *l,
                         float *acc, int64_t head_dim);

    // acc_r += Σ_j weights[r·ld + j] · v_j for the `n` cache rows v_j starting at `v`.
    void (*accumulate)(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim,
                       const void *v, pagoda_dtype_t dtype, int64_t n, float *acc,
                       RowPrefetch prefetch);

    // v[i] = cap · tanh(v[i] / cap) for i < n: soft-capping of one head's scores before the
    // softmax step (ABI 1.8's softcap; softcap.hpp).
    void (*softcap)(float *v, int64_t n, float cap);
};

const AttentionRowKernels &attention_rows_portable();
// Needs AVX2, FMA and F16C (CpuFeatures::avx2_fma_f16c).
const AttentionRowKernels &attention_rows_avx2();

}  // namespace pagoda::cpu
