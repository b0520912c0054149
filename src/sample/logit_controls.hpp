// What a request may do to a logits row before the penalties (vLLM's order): keep only allowed
// ids, mask bad words, add OpenAI's logit_bias, hold back stop tokens until min_tokens, then a
// host's own processor. Host code on one row of f32 logits, O(what the request names), never
// O(vocabulary) except for allowed_token_ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace pagoda::sample {

// The limits of one bias (OpenAI: "values between -100 and 100").
inline constexpr float kMaxLogitBias = 100.0f;

struct LogitControls {
    // (token, bias) added to the logits, sorted by token, each token once.
    std::vector<std::pair<int32_t, float>> logit_bias;
    // The min_tokens_stop_ids given to apply_logit_controls() are masked while fewer than this
    // many tokens have been generated.
    int32_t min_tokens = 0;
    // Token sequences: the last token of one is masked when the tokens generated end with the
    // rest of it (a one-token word is always masked).
    std::vector<std::vector<int32_t>> bad_words;
    // Sorted, each once; empty = every token may be sampled.
    std::vector<int32_t> allowed_token_ids;

    bool active() const {
        return !logit_bias.empty() || min_tokens > 0 || !bad_words.empty() ||
               !allowed_token_ids.empty();
    }
};

// Sorts and checks the controls against a vocabulary of `vocab` ids (vocab <= 0: ids are only
// checked for >= 0). Throws Error(PAGODA_ERR_INVALID_ARGUMENT) naming the field and the entry at
// fault: a token outside the vocabulary, a bias that is not finite or outside [-100, 100], a
// token biased twice, min_tokens < 0, an empty bad word.
void normalize_controls(LogitControls &controls, int64_t vocab);

// A host's own hook on the row, after the controls above and before the penalties. Returns 0
// to go on; anything else ends the request (the caller's business).
struct LogitsHook {
    int32_t (*fn)(void *context, std::span<float> row) = nullptr;
    void *context = nullptr;
    explicit operator bool() const { return fn != nullptr; }
};

// Applies the controls to `logits` in vLLM's order (allowed ids, bad words, bias, min_tokens).
// `output` is what the sequence generated so far (bad words and min_tokens look at it only);
// `min_tokens_stop_ids` are the ids min_tokens holds back (the end-of-sequence ids unless EOS is
// ignored, and the request's stop ids). `keep` is reused storage. Touches only what it names.
void apply_logit_controls(std::span<float> logits, const LogitControls &controls,
                          std::span<const int32_t> output,
                          std::span<const int32_t> min_tokens_stop_ids,
                          std::vector<float> &keep);

}  // namespace pagoda::sample
