// Merging partial attention results by their log-sum-exp; attention_merge.cu. Plain C++ so
// both nvcc and the host compiler read it.
//
// Attention over a set of keys split into parts P_1 … P_n is recovered from each part's
// normalised output o_p and log-sum-exp lse_p = log Σ_{k∈P_p} exp(score_k):
//     out = Σ_p exp(lse_p − M)·o_p / Σ_p exp(lse_p − M),   M = max_p lse_p
// (flash-decoding's reduction; the same algebra as FlashAttention's online softmax). The parts
// may be partitions of one device's context (the split-K decode kernel) or the shares of the
// context that different devices hold (cache parallelism), so the interface knows nothing of
// paged attention.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// n_parts partial results for the same n_tokens × n_heads query rows.
struct AttentionPartials {
    // [n_parts][n_tokens][n_heads][head_dim] f32: each part's output, already normalised by its
    // own sum. A part that saw no key of a row holds anything finite there (its weight is 0).
    const float *out;
    // [n_parts][n_tokens][n_heads] f32: each part's natural-log log-sum-exp of the scaled
    // scores; −∞ for a part that saw no key of that row.
    const float *lse;
    int64_t n_parts;
    int64_t n_tokens;
    int64_t n_heads;
    int64_t head_dim;
};

// Queues out[token_rows[t]·out_token_stride + h·head_dim + d] = the merge of every part's row
// (t, h) on `stream`. `token_rows` ([n_tokens], device memory) maps a partial token to its row
// of `out`, -1 skipping it; NULL maps t to t. The merge is in f32 and each result is rounded
// once to `out_dtype` (F32, BF16 or F16). A row that no part saw is written as zeros. When
// `error` is not NULL and holds a record (device_error.hpp), nothing is written. Returns the
// launch's error (cudaSuccess, doing nothing, when there are no rows).
cudaError_t merge_attention(const AttentionPartials &partials, const int32_t *token_rows,
                            void *out, pagoda_dtype_t out_dtype, int64_t out_token_stride,
                            const DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
