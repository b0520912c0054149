// A step's batch cut into units that flow through a pipeline's stages one after another, so
// that stage k works on unit i while stage k+1 works on unit i−1: micro-batches of whole
// sequences (as vLLM's pipeline keeps up to pp batches in flight), and TeraPipe's slices of a
// long prefill chunk, each slice attending to the K/V its predecessors wrote (a chunked
// prefill within the step). Every stage runs the units in order, which is all a slice needs.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/executor.hpp"
#include "exec/forward_batch.hpp"

namespace pagoda::exec {

struct PipelineUnit {
    ForwardBatch batch;
    // For each of batch.logit_rows, its index in the step's logit_rows.
    std::vector<int32_t> step_rows;
    // For each of batch.hidden_rows, its index in the step's hidden_rows.
    std::vector<int32_t> hidden_step_rows;
};

// Cuts `step` for a pipeline of `stages` stages as `options` say (stages ≤ 1: one unit, the
// whole step). Slices are cut first, from chunks long enough; the other sequences are split
// into at most options.micro_batches (0: automatic, see PipelineOptions) micro-batches of about
// equal token counts.
std::vector<PipelineUnit> split_step(const ForwardBatch &step, int32_t stages, const PipelineOptions &options);

// The slice lengths for a chunk of `tokens` tokens in the proportions of `plan_slices`, each a
// multiple of `granularity` but the last, none empty; {tokens} when the chunk is too short to
// cut. Exposed for tests.
std::vector<int64_t> scale_slices(const std::vector<int64_t> &plan_slices, int64_t tokens, int64_t granularity);

}  // namespace pagoda::exec
