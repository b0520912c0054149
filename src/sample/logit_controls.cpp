#include "sample/logit_controls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace pagoda::sample {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

[[noreturn]] void bad(const std::string &message) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT, message);
}

void check_token(int32_t id, int64_t vocab, const std::string &where) {
    if (id < 0 || (vocab > 0 && id >= vocab))
        bad(where + " is token " + std::to_string(id) + ", outside the vocabulary [0, " +
            (vocab > 0 ? std::to_string(vocab) : std::string("...")) + ")");
}

bool in_row(int32_t id, std::span<const float> logits) {
    return id >= 0 && size_t(id) < logits.size();
}

}  // namespace

void normalize_controls(LogitControls &c, int64_t vocab) {
    for (size_t i = 0; i < c.logit_bias.size(); ++i) {
        const auto &[token, bias] = c.logit_bias[i];
        const std::string where = "logit_bias[" + std::to_string(i) + "]";
        check_token(token, vocab, where);
        if (!std::isfinite(bias) || bias < -kMaxLogitBias || bias > kMaxLogitBias)
            bad(where + " (token " + std::to_string(token) + ") has bias " + std::to_string(bias) +
                ": a bias must be in [-100, 100]");
    }
    std::sort(c.logit_bias.begin(), c.logit_bias.end());
    for (size_t i = 1; i < c.logit_bias.size(); ++i)
        if (c.logit_bias[i].first == c.logit_bias[i - 1].first)
            bad("logit_bias names token " + std::to_string(c.logit_bias[i].first) + " twice");
    if (c.min_tokens < 0)
        bad("min_tokens must be >= 0 (got " + std::to_string(c.min_tokens) + ")");
    for (size_t w = 0; w < c.bad_words.size(); ++w) {
        const std::string where = "bad_words[" + std::to_string(w) + "]";
        if (c.bad_words[w].empty()) bad(where + " has no tokens");
        for (size_t k = 0; k < c.bad_words[w].size(); ++k)
            check_token(c.bad_words[w][k], vocab, where + "[" + std::to_string(k) + "]");
    }
    for (size_t i = 0; i < c.allowed_token_ids.size(); ++i)
        check_token(c.allowed_token_ids[i], vocab, "allowed_token_ids[" + std::to_string(i) + "]");
    std::sort(c.allowed_token_ids.begin(), c.allowed_token_ids.end());
    c.allowed_token_ids.erase(std::unique(c.allowed_token_ids.begin(), c.allowed_token_ids.end()),
                              c.allowed_token_ids.end());
}

void apply_logit_controls(std::span<float> logits, const LogitControls &c,
                          std::span<const int32_t> output,
                          std::span<const int32_t> min_tokens_stop_ids, std::vector<float> &keep) {
    // Allowed ids: the row becomes -inf but for them (ids past a smaller row are skipped; the
    // engine checks ids against the model's vocabulary at submit).
    if (!c.allowed_token_ids.empty()) {
        keep.clear();
        for (int32_t id : c.allowed_token_ids)
            keep.push_back(in_row(id, logits) ? logits[size_t(id)] : 0.0f);
        std::fill(logits.begin(), logits.end(), -kInf);
        for (size_t i = 0; i < keep.size(); ++i) {
            const int32_t id = c.allowed_token_ids[i];
            if (in_row(id, logits)) logits[size_t(id)] = keep[i];
        }
    }
    // vLLM's bad words: a word of n tokens whose first n - 1 are the last tokens generated has
    // its last token masked. Only generated tokens count, never the prompt.
    for (const std::vector<int32_t> &word : c.bad_words) {
        const size_t prefix = word.size() - 1;
        if (prefix > output.size() || !in_row(word.back(), logits)) continue;
        if (std::equal(word.begin(), word.end() - 1, output.end() - std::ptrdiff_t(prefix)))
            logits[size_t(word.back())] = -kInf;
    }
    for (const auto &[token, bias] : c.logit_bias)
        if (in_row(token, logits)) logits[size_t(token)] += bias;
    if (output.size() < size_t(std::max(c.min_tokens, 0)))
        for (int32_t id : min_tokens_stop_ids)
            if (in_row(id, logits)) logits[size_t(id)] = -kInf;
}

}  // namespace pagoda::sample
