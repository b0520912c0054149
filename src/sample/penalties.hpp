// Repetition, presence and frequency penalties: they change only the logits of tokens the
// sequence has seen, so they cost O(distinct seen tokens), never O(vocabulary).
#pragma once

#include <span>
#include <vector>

#include "sample/sampler.hpp"

namespace pagoda::sample {

// Applies, in this order (vLLM's):
//   repetition (HF, Keskar et al. 2019 "CTRL" §4.1), to every token of prompt or output:
//     logit > 0 ? logit / penalty : logit * penalty
//   presence and frequency (OpenAI), to output tokens:
//     logit -= presence * (count > 0) + frequency * count
// Returns false, touching nothing, when every penalty is off. Otherwise `raw_seen` receives each
// seen token's logit before penalties, parallel to history.seen_tokens(), so raw
// log-probabilities can still be reported. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for a
// history token outside the vocabulary.
bool apply_penalties(std::span<float> logits, const SamplingParams &params,
                     const TokenHistory &history, std::vector<float> &raw_seen);

}  // namespace pagoda::sample
