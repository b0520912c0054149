// The first kernel of a paged-attention launch (paged_attention_params.hpp): checks the batch
// held in device memory and plans the attention kernels' work; paged_attention_batch.cu. Plain
// C++ so both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include "paged_attention_params.hpp"

namespace pagoda::cuda {

// Queues the plan on `stream`: checks query_start (starts at 0, never decreases) and each
// context length (at least its q_len, at most a.context_limit), reporting the first failure
// through a.error the way the CPU backend words it; then fills plan.prefill_tile_start,
// zeroes plan.prefill_next_item and, when it is not NULL, fills plan.decode_token_rows.
// Does nothing when the stream's error record is already set. Returns the launch's error.
cudaError_t plan_paged_attention(const PagedAttentionArgs &a, const PagedAttentionPlan &plan,
                                 cudaStream_t stream);

}  // namespace pagoda::cuda
