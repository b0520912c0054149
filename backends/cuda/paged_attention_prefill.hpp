// The prefill (and chunked-prefill) kernel of paged attention, FlashAttention-2 style over the
// paged blocks; paged_attention_prefill.cu. Plain C++ so both nvcc and the host compiler read
// it.
#pragma once

#include <cuda_runtime_api.h>

#include "paged_attention_params.hpp"

namespace pagoda::cuda {

// Queues the prefill kernel on `stream`, after plan_paged_attention. A persistent grid of
// `sm_count` × (blocks per SM) blocks takes work items — (row tile of kPrefillRows query rows,
// KV head) of the sequences with more than kDecodeMaxQueries query tokens — from the plan's
// counter, the costliest tiles of each sequence (the last, under a causal mask) first, and
// writes `out`. Needs a.head_dim ≤ kMaxAttentionHeadDim. Returns the launch's error.
cudaError_t launch_paged_attention_prefill(const PagedAttentionArgs &a,
                                           const PagedAttentionPlan &plan, int sm_count,
                                           cudaStream_t stream);

}  // namespace pagoda::cuda
