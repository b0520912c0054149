#include "sample/logprobs.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace pagoda::sample {

double log_normalizer(std::span<const float> logits) {
    if (logits.empty())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "log-softmax of an empty logits row");
    constexpr float kInf = std::numeric_limits<float>::infinity();
    float max = -kInf;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float x = logits[i];
        // One comparison catches both NaN and +inf, which would poison every probability.
        if (!(x < kInf))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "logits[" + std::to_string(i) + "] is " + (std::isnan(x) ? "NaN" : "+inf") +
                            " (vocabulary of " + std::to_string(logits.size()) + ")");
        if (x > max) max = x;
    }
    if (max == -kInf)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "every one of the " + std::to_string(logits.size()) + " logits is -inf");
    // Four partial sums: one running sum would make every add wait for the previous one.
    double sums[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = 0;
    for (; i + 4 <= logits.size(); i += 4)
        for (size_t lane = 0; lane < 4; ++lane) sums[lane] += double(std::exp(logits[i + lane] - max));
    for (; i < logits.size(); ++i) sums[0] += double(std::exp(logits[i] - max));
    return double(max) + std::log((sums[0] + sums[1]) + (sums[2] + sums[3]));
}

void top_logprobs_into(std::span<const float> logits, size_t n, double log_norm,
                       std::vector<ScoredToken> &scratch, std::vector<TokenLogprob> &out) {
    select_best(logits, n, scratch);
    out.clear();
    out.reserve(scratch.size());
    for (const ScoredToken &s : scratch)
        out.push_back({s.token, float(double(s.score) - log_norm)});
}

float token_logprob(std::span<const float> logits, int32_t token) {
    if (token < 0 || size_t(token) >= logits.size())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "token " + std::to_string(token) + " is outside the vocabulary of " +
                        std::to_string(logits.size()) + " logits");
    return float(double(logits[size_t(token)]) - log_normalizer(logits));
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int32_t n) {
    if (n < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "top_logprobs: n = " + std::to_string(n) + " must be >= 0");
    const double log_norm = log_normalizer(logits);
    std::vector<ScoredToken> scratch;
    std::vector<TokenLogprob> out;
    top_logprobs_into(logits, size_t(n), log_norm, scratch, out);
    return out;
}

}  // namespace pagoda::sample
