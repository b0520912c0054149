// Log-probabilities under the raw model distribution: log_softmax(x)_i = x_i - log_normalizer(x).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "sample/sampler.hpp"
#include "sample/top_select.hpp"

namespace pagoda::sample {

// max(x) + log Σ exp(x_i - max(x)), with the sum in double: subtracting the max keeps every
// exponent <= 0 (no overflow) and the largest term 1 (no total underflow). -inf entries add
// nothing. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for an empty row, a NaN or +inf entry
// (named by index), or a row that is all -inf.
double log_normalizer(std::span<const float> logits);

// The min(n, vocab) most likely tokens with their log-probabilities, most likely first, ties to
// the lower id, given the row's log_normalizer. `scratch` and `out` are reused storage.
void top_logprobs_into(std::span<const float> logits, size_t n, double log_norm,
                       std::vector<ScoredToken> &scratch, std::vector<TokenLogprob> &out);

}  // namespace pagoda::sample
