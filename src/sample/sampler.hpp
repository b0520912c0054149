// Choosing the next token from logits: penalties, temperature, top-k, top-p, min-p, a seeded
// generator, and the log-probabilities callers ask for. Host code on one row of f32 logits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "sample/logit_controls.hpp"

namespace pagoda::sample {

struct SamplingParams {
    float temperature = 1.0f;         // 0 = greedy
    int32_t top_k = 0;                // 0 = off (negative values, vLLM's old "-1", also mean off)
    float top_p = 1.0f;               // 1 = off
    float min_p = 0.0f;               // 0 = off
    float repetition_penalty = 1.0f;  // 1 = off; prompt and output tokens (as vLLM / HF)
    float presence_penalty = 0.0f;    // 0 = off; output tokens (as OpenAI / vLLM)
    float frequency_penalty = 0.0f;   // 0 = off; output tokens
    int32_t logprobs = -1;            // top-n log-probabilities per token; -1 = none, 0 = chosen only
};

// Throws Error(PAGODA_ERR_INVALID_ARGUMENT) naming the first field out of range: temperature
// must be finite and >= 0, top_p in (0, 1], min_p in [0, 1], repetition_penalty finite and > 0,
// the other penalties finite, logprobs >= -1. sample() calls it; a request parser may call it
// earlier to reject a request before it is queued.
void validate_params(const SamplingParams &params);

struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0.0f;
};

struct SampleResult {
    int32_t token = -1;
    float logprob = 0.0f;            // of `token`, under the model's raw distribution
    std::vector<TokenLogprob> top;   // params.logprobs entries, most likely first
};

// A distinct output token and how often it has been generated.
struct TokenCount {
    int32_t token = -1;
    uint32_t count = 0;
};

// Which tokens a sequence has seen, for the penalties. Applying a penalty walks the distinct
// tokens only (seen_tokens(), output_counts()), so its cost does not grow with the vocabulary or
// with repeats of the same token.
class TokenHistory {
public:
    // Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for a negative id.
    void add_prompt(std::span<const int32_t> ids);
    void add_output(int32_t id);
    void clear();

    std::span<const int32_t> prompt() const { return prompt_; }
    std::span<const int32_t> output() const { return output_; }
    // Every distinct token of the prompt or the output, in the order first seen.
    std::span<const int32_t> seen_tokens() const { return seen_; }
    // Every distinct output token with its count, in the order first generated.
    std::span<const TokenCount> output_counts() const { return output_counts_; }
    // How often `id` has been generated (0 if never).
    uint32_t output_count(int32_t id) const;
    bool has_seen(int32_t id) const { return seen_index_.count(id) != 0; }
    // Where `id` sits in seen_tokens(), or -1 if it has not been seen.
    int64_t seen_position(int32_t id) const;

private:
    void note_seen(int32_t id);

    std::vector<int32_t> prompt_;
    std::vector<int32_t> output_;
    std::vector<int32_t> seen_;
    std::unordered_map<int32_t, size_t> seen_index_;     // token -> position in seen_
    std::vector<TokenCount> output_counts_;
    std::unordered_map<int32_t, size_t> output_index_;   // token -> position in output_counts_
};

// Reproducible per request: the same seed gives the same draws on every machine.
using Rng = std::mt19937_64;

// A uniform double in [0, 1) from the top 53 bits of one rng() draw. Written out rather than
// std::uniform_real_distribution, whose algorithm differs between standard libraries.
inline double uniform_unit(Rng &rng) { return double(rng() >> 11) * 0x1.0p-53; }
// The same from the top 24 bits, exactly a float in [0, 1): a draw for the device's sampler
// (rounding uniform_unit to float could give 1).
inline float uniform_unit_f32(Rng &rng) { return float(rng() >> 40) * 0x1.0p-24f; }

// Samples from `logits` (vocab entries; may be modified in place). Log-probabilities are
// those of the raw logits (before penalties and temperature), as vLLM reports them.
// Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for bad params, empty logits, a NaN or +inf logit,
// all logits -inf, or a history token outside the vocabulary. Not thread-safe per Rng; calls on
// different threads with different Rngs are independent (scratch buffers are per thread).
SampleResult sample(std::span<float> logits, const SamplingParams &params,
                    const TokenHistory &history, Rng &rng);

// What a request does to its row beyond SamplingParams (logit_controls.hpp), applied after the
// raw log-probabilities are taken and before the penalties.
struct RowControls {
    // A constraint's mask, first: it sets the logits of the tokens it refuses to -inf and leaves
    // the others as they are (so the raw row needs no copy for it). Returns 0.
    LogitsHook mask;
    const LogitControls *controls = nullptr;        // NULL = none
    std::span<const int32_t> min_tokens_stop_ids;   // what min_tokens holds back
    LogitsHook processor;                           // the host's, last
};

// The processor returned `code` (not 0): the request is to end.
struct ProcessorStopped {
    int32_t code = 0;
};

// sample() with the controls. The reported log-probabilities stay those of the raw row. Throws
// as sample() does, and also Error(PAGODA_ERR_INVALID_ARGUMENT) when the controls or the
// processor leave no token to sample or the processor writes a NaN or +inf; throws
// ProcessorStopped when the processor asks to stop.
SampleResult sample(std::span<float> logits, const SamplingParams &params,
                    const TokenHistory &history, Rng &rng, const RowControls &row_controls);

// A token the sampler may draw and its probability after every filter.
struct TokenProbability {
    int32_t token = -1;
    double probability = 0.0;
};

// The distribution sample() draws from when temperature > 0: penalties, temperature, top-k,
// top-p and min-p applied; only tokens with a nonzero probability, in the order sample() walks
// them. For tests and debugging; `logits` is modified as sample() would.
std::vector<TokenProbability> filtered_distribution(std::span<float> logits,
                                                    const SamplingParams &params,
                                                    const TokenHistory &history,
                                                    const RowControls &row_controls = {});

// log_softmax of `logits`, for prompt log-probabilities: the given token's value and the top-n.
float token_logprob(std::span<const float> logits, int32_t token);
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int32_t n);

}  // namespace pagoda::sample
