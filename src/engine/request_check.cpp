#include "engine/request_check.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"

namespace pagoda::engine {

namespace {

// An embedding request generates nothing: what only shapes generation is refused rather than
// silently dropped; max_tokens and the sampling parameters are not read (request.h).
void check_embedding_request(const RequestConfig &c) {
    auto bad = [](const std::string &m) { throw Error(PAGODA_ERR_INVALID_ARGUMENT, m); };
    const std::string what = "an embedding request (PAGODA_REQUEST_EMBED) ";
    if (c.pooling < PAGODA_POOLING_MODEL || c.pooling > PAGODA_POOLING_MEAN)
        bad("pooling must be a pagoda_pooling_t (got " + std::to_string(c.pooling) + ")");
    if (c.embedding_normalize < PAGODA_EMBEDDING_NORMALIZE_MODEL ||
        c.embedding_normalize > PAGODA_EMBEDDING_NORMALIZE_NONE)
        bad("embedding_normalize must be a pagoda_embedding_normalize_t (got " +
            std::to_string(c.embedding_normalize) + ")");
    if (c.n != 1) bad(what + "returns one vector: n must be 1 (got " + std::to_string(c.n) + ")");
    if (c.best_of > 1)
        bad(what + "samples nothing: best_of must be 0 or 1 (got " + std::to_string(c.best_of) +
            ")");
    if (c.beam_width != 0)
        bad(what + "searches no beams: beam_width must be 0 (got " +
            std::to_string(c.beam_width) + ")");
    if (c.sampling.logprobs != -1)
        bad(what + "generates no tokens: logprobs must be -1 (got " +
            std::to_string(c.sampling.logprobs) + ")");
    if (c.prompt_logprobs != -1)
        bad(what + "computes no logits: prompt_logprobs must be -1 (got " +
            std::to_string(c.prompt_logprobs) + ")");
    if (!c.stop_token_ids.empty()) bad(what + "generates no tokens: stop_token_ids must be empty");
    if (!c.stop_strings.empty()) bad(what + "generates no text: stop_strings must be empty");
    if (c.controls_row())
        bad(what + "samples nothing: logit_bias, bad_words, allowed_token_ids, min_tokens and "
                   "logits_processor must be unset");
    if (c.constraint_kind != grammar::ConstraintKind::none)
        bad(what + std::string("generates no output to constrain: constraint_kind must be "
                               "PAGODA_CONSTRAINT_NONE (got a ") +
            grammar::constraint_kind_name(c.constraint_kind) + ")");
}

}  // namespace

void check_request(const RequestConfig &c) {
    const sample::SamplingParams &s = c.sampling;
    auto bad = [](const std::string &m) { throw Error(PAGODA_ERR_INVALID_ARGUMENT, m); };
    if (c.embeds()) {
        check_embedding_request(c);
        return;
    }
    if (c.pooling != PAGODA_POOLING_MODEL || c.embedding_normalize != 0)
        bad("pooling and embedding_normalize are read only with PAGODA_REQUEST_EMBED: leave "
            "them 0");
    if (c.max_tokens < 1) bad("max_tokens must be at least 1 (got " + std::to_string(c.max_tokens) + ")");
    if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature))
        bad("temperature must be a finite number >= 0 (got " + std::to_string(s.temperature) + ")");
    if (s.top_k < 0) bad("top_k must be >= 0 (got " + std::to_string(s.top_k) + ")");
    if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) bad("top_p must be in (0, 1] (got " + std::to_string(s.top_p) + ")");
    if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) bad("min_p must be in [0, 1] (got " + std::to_string(s.min_p) + ")");
    if (!(s.repetition_penalty > 0.0f) || !std::isfinite(s.repetition_penalty))
        bad("repetition_penalty must be > 0 (got " + std::to_string(s.repetition_penalty) + ")");
    if (!std::isfinite(s.presence_penalty) || !std::isfinite(s.frequency_penalty))
        bad("presence_penalty and frequency_penalty must be finite");
    if (s.logprobs < -1) bad("logprobs must be -1 (none) or >= 0 (got " + std::to_string(s.logprobs) + ")");
    if (c.prompt_logprobs < -1)
        bad("prompt_logprobs must be -1 (none) or >= 0 (got " + std::to_string(c.prompt_logprobs) + ")");
    for (const std::string &stop : c.stop_strings)
        if (stop.empty()) bad("stop strings must not be empty");
    if (c.n < 1) bad("n must be at least 1 (got " + std::to_string(c.n) + ")");
    if (c.best_of != 0 && c.best_of < c.n)
        bad("best_of must be 0 or >= n (got best_of " + std::to_string(c.best_of) + ", n " + std::to_string(c.n) + ")");
    if (c.beam_width < 0) bad("beam_width must be >= 0 (got " + std::to_string(c.beam_width) + ")");
    if (c.beam_width > 0 && c.n > c.beam_width)
        bad("n must be <= beam_width for beam search (got n " + std::to_string(c.n) + ", beam_width " +
            std::to_string(c.beam_width) + ")");
    if (c.beam_width > 0 && c.best_of > c.beam_width)
        bad("best_of must be 0 or <= beam_width for beam search (got " + std::to_string(c.best_of) + ")");
    if (!std::isfinite(c.length_penalty)) bad("length_penalty must be finite");
    if (c.early_stopping != 0 && c.early_stopping != 1)
        bad("early_stopping must be 0 or 1 (got " + std::to_string(c.early_stopping) + ")");
    if (c.controls.min_tokens > c.max_tokens)
        bad("min_tokens (" + std::to_string(c.controls.min_tokens) +
            ") must be at most max_tokens (" + std::to_string(c.max_tokens) + ")");
    // Beams are ranked by raw log-probabilities, which the controls do not change (as vLLM's
    // beam search ignores them): refused rather than silently not applied.
    if (c.beam_search() && c.controls_row())
        bad("beam search does not take logit_bias, min_tokens, bad_words, allowed_token_ids or "
            "a logits processor");
    if (c.beam_search() && c.constraint_kind != grammar::ConstraintKind::none)
        bad(std::string("beam search does not take a constraint (here a ") +
            grammar::constraint_kind_name(c.constraint_kind) + "): sample with n instead");
}

}  // namespace pagoda::engine
