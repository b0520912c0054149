#include "sample/penalties.hpp"

#include <string>

#include "common/error.hpp"

namespace pagoda::sample {

bool apply_penalties(std::span<float> logits, const SamplingParams &params,
                     const TokenHistory &history, std::vector<float> &raw_seen) {
    const bool repetition = params.repetition_penalty != 1.0f;
    const bool additive = params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
    if (!repetition && !additive) return false;

    const std::span<const int32_t> seen = history.seen_tokens();
    raw_seen.clear();
    raw_seen.reserve(seen.size());
    for (const int32_t id : seen) {
        if (size_t(id) >= logits.size())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "sampling penalties: token " + std::to_string(id) +
                            " in the sequence's history is outside the vocabulary of " +
                            std::to_string(logits.size()) + " logits");
        raw_seen.push_back(logits[size_t(id)]);
    }

    if (repetition) {
        const float penalty = params.repetition_penalty;
        for (const int32_t id : seen) {
            float &x = logits[size_t(id)];
            x = x > 0.0f ? x / penalty : x * penalty;
        }
    }
    if (additive) {
        for (const TokenCount &tc : history.output_counts())
            logits[size_t(tc.token)] -=
                params.presence_penalty + params.frequency_penalty * float(tc.count);
    }
    return true;
}

}  // namespace pagoda::sample
