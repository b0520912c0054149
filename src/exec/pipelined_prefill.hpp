// Token-level pipelined prefill (TeraPipe): one prompt, cut into slices, runs through K stages,
// each a contiguous range of decoder layers on its own thread and stream, so that stage k works
// on slice i while stage k+1 works on slice i−1. A slice attends to every earlier slice's K/V,
// as a chunked prefill does. This is how a pipeline plan's prefill executes; the TeraPipe DP
// (plan/terapipe_slicing.hpp) chooses the slice lengths.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/llama_forward.hpp"
#include "kv/kv_cache.hpp"

namespace pagoda::exec {

class PipelinedPrefill {
public:
    // Stage k runs layers [boundaries[k], boundaries[k+1]) on `streams[k]`; boundaries runs from
    // 0 to the model's layer count, strictly increasing. Streams may share a device (the CPU
    // backend with one thread per stage runs the stages on separate cores). Throws
    // INVALID_ARGUMENT for boundaries that do not fit.
    PipelinedPrefill(std::shared_ptr<const model::Model> model,
                     const std::vector<const runtime::Stream *> &streams,
                     const std::vector<int32_t> &boundaries);
    ~PipelinedPrefill();
    PipelinedPrefill(const PipelinedPrefill &) = delete;
    PipelinedPrefill &operator=(const PipelinedPrefill &) = delete;

    size_t stages() const noexcept { return forwards_.size(); }

    // Runs `prompt` in slices of `slice_lengths` (positive, summing to its length) through the
    // stages, writing K/V for sequence `seq` of `cache`, which must already hold room for the
    // prompt (KvCache::reserve); returns the last token's logits. An error in any stage stops
    // every stage and is rethrown here.
    std::vector<float> run(const std::vector<int32_t> &prompt,
                           const std::vector<int64_t> &slice_lengths, kv::KvCache &cache,
                           uint64_t seq);

private:
    std::shared_ptr<const model::Model> model_;
    std::vector<int32_t> boundaries_;
    std::vector<std::unique_ptr<LlamaForward>> forwards_;
};

}  // namespace pagoda::exec
