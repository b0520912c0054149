// The split-K decode kernel of paged attention (flash-decoding: Dao, Haziza, Massa, Sizov 2023,
// "Flash-Decoding for long-context inference"); paged_attention_decode.cu. Plain C++ so both
// nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "paged_attention_params.hpp"

namespace pagoda::cuda {

// Query-row chunks of kDecodeRows per (sequence, KV head) in the decode grid: enough for
// kDecodeMaxQueries tokens of a whole GQA group.
int64_t decode_row_chunks(int64_t group);

// Queues the decode kernel on `stream`, after plan_paged_attention. Its grid is (sequence,
// KV head × row chunk, partition); a block whose sequence is not a decode sequence (see
// kDecodeMaxQueries), or whose rows or partition lie past the sequence's, does nothing but
// mark its partials empty. With plan.n_partitions = 1 it writes `out`; otherwise it writes
// each partition's normalised output and log-sum-exp to plan.partial_out / partial_lse for
// merge_attention. Needs a.head_dim ≤ kMaxAttentionHeadDim. Returns the launch's error.
cudaError_t launch_paged_attention_decode(const PagedAttentionArgs &a,
                                          const PagedAttentionPlan &plan, cudaStream_t stream);

}  // namespace pagoda::cuda
