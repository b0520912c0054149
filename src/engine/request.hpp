// A request as the engine tracks it: a group of sequences sharing one prompt (one sequence
// until the prompt is computed, then `best_of` sampled ones or `beam_width` beams), each with
// its tokens, how many of them the KV cache holds, its sampling state and what it has produced
// since its last output.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_matcher.hpp"
#include "grammar/constraint_text.hpp"
#include "pagoda/engine.h"
#include "sample/sampler.hpp"
#include "sample/stop_strings.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::engine {

// pagoda_request_options_t with everything it points to copied.
struct RequestConfig {
    uint32_t flags = 0;
    int32_t max_tokens = 256;
    sample::SamplingParams sampling;
    uint64_t seed = 0;
    std::vector<int32_t> stop_token_ids;
    std::vector<std::string> stop_strings;
    int32_t prompt_logprobs = -1;
    int32_t priority = 0;  // lower runs first among waiting requests
    int32_t n = 1;
    int32_t best_of = 0;      // 0 = n
    int32_t beam_width = 0;   // > 0: beam search
    float length_penalty = 1.0f;
    int32_t early_stopping = 0;
    sample::LogitControls controls;  // logit_bias, min_tokens, bad_words, allowed_token_ids
    // The host's hook on each row (C API only): a function pointer, so it never goes on the
    // intake wire, and a mesh over processes refuses it at submit.
    pagoda_logits_processor_fn processor = nullptr;
    void *processor_user = nullptr;
    // The output's constraint as the host wrote it (it travels on the intake wire), and its
    // compiled form, which submit fills on every rank.
    grammar::ConstraintKind constraint_kind = grammar::ConstraintKind::none;
    std::string constraint_text;
    std::shared_ptr<const grammar::CompiledConstraint> constraint;
    // Embedding requests (PAGODA_REQUEST_EMBED): a pagoda_pooling_t and a
    // pagoda_embedding_normalize_t as the host wrote them; make_request resolves them.
    int32_t pooling = PAGODA_POOLING_MODEL;
    int32_t embedding_normalize = PAGODA_EMBEDDING_NORMALIZE_MODEL;

    bool embeds() const { return (flags & PAGODA_REQUEST_EMBED) != 0; }

    bool beam_search() const { return beam_width > 0; }
    // Sequences the request runs at once after its prompt.
    int32_t width() const { return beam_search() ? beam_width : std::max(n, best_of); }
    // Outputs stream step by step only when every sequence generated is returned; best_of > n
    // and beam search return theirs at the end (as vLLM).
    bool streams() const { return !beam_search() && width() == n; }
    // Whether something beyond SamplingParams changes the row: the host sampler must pick.
    bool controls_row() const {
        return controls.active() || processor != nullptr || constraint != nullptr;
    }
};

// What a request produced in one step, owned until it is polled.
struct Output {
    uint64_t request_id = 0;
    pagoda_finish_reason_t finish_reason = PAGODA_FINISH_NONE;
    pagoda_status_t status = PAGODA_OK;
    std::string error;
    std::vector<int32_t> token_ids;
    std::string text;
    bool has_logprobs = false;
    std::vector<float> logprobs;
    std::vector<pagoda_logprob_t> top_logprobs;
    int32_t n_top_logprobs = 0;
    size_t n_prompt_tokens = 0;
    size_t n_generated = 0;
    bool has_prompt_logprobs = false;
    std::vector<float> prompt_logprobs;
    std::vector<pagoda_logprob_t> prompt_top_logprobs;
    int32_t n_prompt_top_logprobs = 0;
    int32_t sequence_index = 0;
    float cumulative_logprob = 0.0f;
    bool request_finished = false;
    std::vector<float> embedding;  // an embedding request's pooled vector, on its last output
};

// Where a request is in the engine: queued for (re)admission, holding device blocks, or with
// its blocks in host swap space.
enum class RequestState { waiting, running, swapped };

// One sequence of a request. Its KV blocks live in the cache under `kv_id`.
struct Sequence {
    uint64_t kv_id = 0;
    int32_t index = 0;            // which of the request's sequences (sampling: 0..best_of-1)
    std::vector<int32_t> tokens;  // prompt, then generated
    int64_t n_computed = 0;       // leading tokens whose keys and values the cache holds
    double cumulative_logprob = 0.0;
    pagoda_finish_reason_t finish_reason = PAGODA_FINISH_NONE;

    sample::TokenHistory history;
    sample::Rng rng;
    std::optional<tok::Detokenizer> detokenizer;  // absent when the model has no tokenizer
    std::optional<sample::StopStringMatcher> stop_matcher;
    std::optional<grammar::ConstraintMatcher> constraint;  // where it is in its request's constraint

    // What it produced and has not sent: each step's for streaming requests, everything for
    // requests that answer at the end.
    Output pending;

    int64_t n_uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

struct Request {
    uint64_t id = 0;
    RequestConfig config;
    size_t n_prompt = 0;
    int64_t max_total_tokens = 0; // prompt + generated may not pass this (context, cache)
    RequestState state = RequestState::waiting;
    int64_t prompt_tokens_counted = 0;  // prompt tokens computed once (for the engine's stats)

    // For the latency metrics (steady clock): submitted, first scheduled, its last tokens.
    std::chrono::steady_clock::time_point submitted_at;
    std::chrono::steady_clock::time_point last_tokens_at;
    bool was_scheduled = false;
    bool has_tokens = false;

    // The sequences still generating (one until the prompt has been sampled: `forked` false),
    // and those done but kept for the final answer (best_of > n, beam search).
    std::vector<std::unique_ptr<Sequence>> live;
    std::vector<std::unique_ptr<Sequence>> done;
    bool forked = false;
    int32_t streamed_finished = 0;  // streaming: sequences whose last output went out

    // What min_tokens holds back: the end-of-sequence ids (unless EOS is ignored) and the
    // request's stop ids; filled when min_tokens > 0.
    std::vector<int32_t> min_tokens_stop_ids;

    // Prompt log-probabilities, filled chunk by chunk and sent with the first output.
    std::vector<float> prompt_logprobs;
    std::vector<pagoda_logprob_t> prompt_top_logprobs;
    bool prompt_logprobs_sent = false;

    // Embedding requests: the pooling resolved against the model, and, for mean pooling, the
    // sum of the prompt rows' hidden states computed so far (reset when a preemption by
    // recompute starts the prompt over). Summed in double: a long prompt adds thousands.
    bool mean_pooling = false;
    bool normalize = true;
    std::vector<double> pooled_sum;

    Sequence &first() { return *live.front(); }
    const Sequence &first() const { return *live.front(); }
    size_t n_generated(const Sequence &s) const { return s.tokens.size() - n_prompt; }
    bool wants_prompt_logprobs() const { return config.prompt_logprobs >= 0 && !prompt_logprobs_sent; }
    // Whether every prompt row must be computed here (no cached prefix taken).
    bool needs_every_prompt_row() const {
        return wants_prompt_logprobs() || (config.embeds() && mean_pooling);
    }
};

// Scheduling order: lower priority value first, then earlier arrival (ids grow with arrival).
inline bool runs_before(const Request *a, const Request *b) {
    if (a->config.priority != b->config.priority) return a->config.priority < b->config.priority;
    return a->id < b->id;
}

}  // namespace pagoda::engine
