#include "engine/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "exec/forward_batch.hpp"
#include "pagoda/tokenizer.h"

namespace pagoda::engine {

namespace {

void check_request(const RequestConfig &c) {
    const sample::SamplingParams &s = c.sampling;
    auto bad = [](const std::string &m) { throw Error(PAGODA_ERR_INVALID_ARGUMENT, m); };
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
    auto later = [](const std::string &m) { throw Error(PAGODA_ERR_UNSUPPORTED, m); };
    if (c.n > 1) later("n = " + std::to_string(c.n) + " is not supported yet: it arrives with multi-sequence requests");
    if (c.best_of > c.n)
        later("best_of = " + std::to_string(c.best_of) + " is not supported yet: it arrives with multi-sequence requests");
    if (c.beam_width > 0)
        later("beam_width = " + std::to_string(c.beam_width) +
              " is not supported yet: beam search arrives with multi-sequence requests");
}

}  // namespace

Engine::Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<kv::KvCache> cache,
               EngineConfig config)
    : model_(std::move(model)),
      cache_(std::move(cache)),
      config_(std::move(config)),
      stream_(cache_->device()),
      forward_(model_, stream_),
      scheduler_(SchedulerConfig{config_.max_num_seqs, config_.max_num_batched_tokens,
                                 config_.preemption, config_.reservation}) {
    if (config_.max_num_seqs < 1 || config_.max_num_batched_tokens < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "max_num_seqs and max_num_batched_tokens must be at least 1");
    eos_ids_ = model_->config().eos_token_ids;
    if (eos_ids_.empty() && model_->tokenizer() && model_->tokenizer()->eos_token_id() >= 0)
        eos_ids_.push_back(model_->tokenizer()->eos_token_id());
}

Engine::~Engine() {
    std::lock_guard lock(step_mutex_);
    for (auto &[id, r] : requests_) cache_->release(id);
}

uint64_t Engine::submit_text(std::string_view text, RequestConfig config) {
    const auto &tokenizer = model_->tokenizer();
    if (!tokenizer)
        throw Error(PAGODA_ERR_NOT_FOUND, model_->source() +
                                              " carries no tokenizer: submit token ids instead");
    uint32_t flags = PAGODA_TOKENIZE_PARSE_SPECIAL;
    if ((config.flags & PAGODA_REQUEST_NO_SPECIAL_TOKENS) == 0) flags |= PAGODA_TOKENIZE_ADD_SPECIAL;
    std::vector<int32_t> ids = tokenizer->encode(text, flags);
    if (ids.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the prompt is empty");
    return submit_tokens(ids, std::move(config));
}

uint64_t Engine::submit_tokens(std::span<const int32_t> prompt, RequestConfig config) {
    check_request(config);
    const model::ModelConfig &mc = model_->config();
    if (prompt.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the prompt is empty");
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= mc.vocab_size)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                            ", outside the vocabulary [0, " + std::to_string(mc.vocab_size) + ")");
    int64_t limit = std::min<int64_t>(mc.max_position, cache_->capacity_tokens());
    if (static_cast<int64_t>(prompt.size()) >= limit)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the prompt has " + std::to_string(prompt.size()) +
                        " tokens; this engine holds at most " + std::to_string(limit) +
                        " per sequence (context " + std::to_string(mc.max_position) +
                        ", KV cache " + std::to_string(cache_->capacity_tokens()) +
                        " tokens), leaving room for at least one generated token");

    auto r = std::make_unique<Request>();
    r->config = std::move(config);
    r->tokens.assign(prompt.begin(), prompt.end());
    r->n_prompt = prompt.size();
    r->max_total_tokens =
        std::min<int64_t>(limit, static_cast<int64_t>(prompt.size()) + r->config.max_tokens);
    r->history.add_prompt(prompt);
    r->rng.seed(r->config.seed);
    if (model_->tokenizer()) {
        uint32_t flags = (r->config.flags & PAGODA_REQUEST_KEEP_SPECIAL_TEXT) ? 0u
                                                                              : PAGODA_DETOKENIZE_SKIP_SPECIAL;
        r->detokenizer.emplace(model_->tokenizer(), prompt, flags);
    }
    if (!r->config.stop_strings.empty())
        r->stop_matcher.emplace(r->config.stop_strings,
                                (r->config.flags & PAGODA_REQUEST_INCLUDE_STOP_STRING) != 0);

    std::lock_guard lock(incoming_mutex_);
    r->id = next_id_++;
    uint64_t id = r->id;
    incoming_.push_back(std::move(r));
    ++live_requests_;
    return id;
}

void Engine::abort(uint64_t id) {
    {
        std::lock_guard lock(incoming_mutex_);
        auto it = std::find_if(incoming_.begin(), incoming_.end(),
                               [&](const auto &r) { return r->id == id; });
        if (it != incoming_.end()) {
            Output out;
            finish(**it, PAGODA_FINISH_ABORTED, out);
            incoming_.erase(it);
            --live_requests_;
            ++n_finished_;
            deliver({std::move(out)});
            return;
        }
    }
    std::vector<Output> produced;
    {
        std::lock_guard lock(step_mutex_);
        auto it = requests_.find(id);
        if (it == requests_.end())
            throw Error(PAGODA_ERR_NOT_FOUND, "no live request has id " + std::to_string(id));
        Output out;
        finish(*it->second, PAGODA_FINISH_ABORTED, out);
        remove(it->second.get());
        emit(std::move(out));
        publish_queue_sizes();
        produced.swap(produced_);
    }
    deliver(std::move(produced));
}

void Engine::admit_incoming() {
    std::vector<std::unique_ptr<Request>> batch;
    {
        std::lock_guard lock(incoming_mutex_);
        batch.swap(incoming_);
    }
    for (auto &r : batch) {
        insert_in_order(queues_.waiting, r.get());
        requests_.emplace(r->id, std::move(r));
    }
}

// Removes a request from every list and returns its blocks, device and swap.
void Engine::remove(Request *r) {
    cache_->release(r->id);
    auto drop = [r](auto &queue) { queue.erase(std::remove(queue.begin(), queue.end(), r), queue.end()); };
    drop(queues_.waiting);
    drop(queues_.running);
    drop(queues_.swapped);
    requests_.erase(r->id);
    --live_requests_;
    ++n_finished_;
}

void Engine::publish_queue_sizes() {
    n_running_.store(static_cast<int64_t>(queues_.running.size()));
    n_swapped_.store(static_cast<int64_t>(queues_.swapped.size()));
}

EngineStats Engine::stats() const {
    EngineStats s;
    s.requests_running = n_running_.load();
    s.requests_swapped = n_swapped_.load();
    s.requests_waiting = std::max<int64_t>(0, live_requests_.load() - s.requests_running - s.requests_swapped);
    s.requests_finished = n_finished_.load();
    s.preemptions_recompute = n_preempt_recompute_.load();
    s.preemptions_swap = n_preempt_swap_.load();
    s.steps = n_steps_.load();
    s.prompt_tokens = n_prompt_tokens_.load();
    s.generated_tokens = n_generated_.load();
    s.batched_sequences = n_batched_seqs_.load();
    return s;
}

// Fills the request's last output: the text held back for stop strings or an open UTF-8
// sequence is flushed unless a stop string ended it.
void Engine::finish(Request &r, pagoda_finish_reason_t reason, Output &out) {
    out.request_id = r.id;
    out.finish_reason = reason;
    out.n_prompt_tokens = r.n_prompt;
    out.n_generated = r.n_generated();
    out.cumulative_logprob = static_cast<float>(r.cumulative_logprob);
    out.request_finished = true;
    if (reason == PAGODA_FINISH_STOP_STRING || reason == PAGODA_FINISH_ERROR) return;
    std::string tail = r.detokenizer ? r.detokenizer->flush() : std::string();
    if (r.stop_matcher) {
        sample::StopStringMatcher::Step res = r.stop_matcher->feed(tail);
        out.text += res.text;
        if (!res.stopped) out.text += r.stop_matcher->flush();
    } else {
        out.text += tail;
    }
}

void Engine::emit(Output out) { produced_.push_back(std::move(out)); }

namespace {

// The outputs a thread is handing to an engine's callback right now. An abort made from inside
// that callback appends to them, so its ABORTED output comes after the request's earlier ones.
struct Delivery {
    const Engine *engine = nullptr;
    std::vector<Output> *queue = nullptr;
};
thread_local Delivery current_delivery;

}  // namespace

// Outside the step lock, so a callback may submit, abort or poll.
void Engine::deliver(std::vector<Output> produced) {
    if (!config_.on_output) {
        std::lock_guard lock(output_mutex_);
        for (Output &out : produced) outputs_.push_back(std::move(out));
        return;
    }
    if (current_delivery.engine == this) {
        for (Output &out : produced) current_delivery.queue->push_back(std::move(out));
        return;
    }
    Delivery outer = current_delivery;
    current_delivery = {this, &produced};
    try {
        for (size_t i = 0; i < produced.size(); ++i) config_.on_output(produced[i]);
    } catch (...) {
        current_delivery = outer;
        throw;
    }
    current_delivery = outer;
}

bool Engine::poll(Output &out) {
    std::lock_guard lock(output_mutex_);
    if (outputs_.empty()) return false;
    out = std::move(outputs_.front());
    outputs_.pop_front();
    return true;
}

void Engine::fail_all(const std::vector<Request *> &requests, pagoda_status_t status,
                      const std::string &message) {
    for (Request *r : requests) {
        Output out;
        finish(*r, PAGODA_FINISH_ERROR, out);
        out.status = status;
        out.error = message;
        remove(r);
        emit(std::move(out));
    }
}

void Engine::step() {
    std::vector<Output> produced;
    try {
        std::lock_guard lock(step_mutex_);
        step_locked();
        produced.swap(produced_);
    } catch (...) {
        {
            std::lock_guard lock(step_mutex_);
            produced.swap(produced_);
        }
        deliver(std::move(produced));
        throw;
    }
    deliver(std::move(produced));
}

void Engine::step_locked() {
    admit_incoming();
    Schedule schedule = scheduler_.schedule(queues_, *cache_);
    n_preempt_recompute_ += schedule.preempted_by_recompute;
    n_preempt_swap_ += schedule.preempted_by_swap;
    if (schedule.chunks.empty()) {
        // Nothing fits, yet something waits: only a request larger than the whole cache could
        // cause it, and submit rejects those, so this is a bug rather than a wait.
        if (queues_.running.empty() && (!queues_.waiting.empty() || !queues_.swapped.empty()))
            fail_all({queues_.swapped.empty() ? queues_.waiting.front() : queues_.swapped.front()},
                     PAGODA_ERR_INTERNAL, "the request could not be scheduled on an empty KV cache");
        publish_queue_sizes();
        return;
    }
    try {
        run_batch(schedule);
    } catch (const Error &e) {
        std::vector<Request *> scheduled;
        for (const ScheduledChunk &c : schedule.chunks) scheduled.push_back(c.request);
        fail_all(scheduled, e.status(), e.what());
        publish_queue_sizes();
        throw;
    }
    ++n_steps_;
    n_batched_seqs_ += static_cast<int64_t>(schedule.chunks.size());
    publish_queue_sizes();
}

void Engine::run_batch(const Schedule &schedule) {
    const int32_t block_size = cache_->geometry().block_size;
    const int64_t vocab = model_->config().vocab_size;

    exec::ForwardBatch batch;
    batch.query_start.push_back(0);
    for (const ScheduledChunk &c : schedule.chunks)
        batch.max_blocks_per_seq = std::max<int32_t>(
            batch.max_blocks_per_seq, static_cast<int32_t>(cache_->table(c.request->id).size()));

    // Per chunk: the first logit row it asked for, and the token position that row is for.
    struct RowsOf { size_t first = 0; int64_t first_position = 0; size_t count = 0; };
    std::vector<RowsOf> rows_of(schedule.chunks.size());
    for (size_t ci = 0; ci < schedule.chunks.size(); ++ci) {
        const ScheduledChunk &c = schedule.chunks[ci];
        Request &r = *c.request;
        const std::vector<int32_t> &table = cache_->table(r.id);
        const int32_t row0 = batch.n_tokens();
        for (int64_t p = r.n_computed; p < r.n_computed + c.n_tokens; ++p) {
            batch.token_ids.push_back(r.tokens[static_cast<size_t>(p)]);
            batch.positions.push_back(static_cast<int32_t>(p));
            batch.slot_mapping.push_back(int64_t{table[static_cast<size_t>(p / block_size)]} * block_size +
                                         p % block_size);
        }
        batch.query_start.push_back(batch.n_tokens());
        int32_t context = static_cast<int32_t>(r.n_computed + c.n_tokens);
        batch.context_lens.push_back(context);
        batch.max_context_len = std::max(batch.max_context_len, context);
        batch.block_tables.insert(batch.block_tables.end(), table.begin(), table.end());
        batch.block_tables.resize(static_cast<size_t>(batch.n_seqs()) * batch.max_blocks_per_seq, 0);

        // Rows whose logits predict a prompt token (for prompt log-probabilities), then the row
        // that samples; the last prompt row may be both.
        RowsOf &rows = rows_of[ci];
        rows.first = batch.logit_rows.size();
        int64_t first = r.n_computed, end = r.n_computed + c.n_tokens;
        int64_t lp_end = r.wants_prompt_logprobs() ? std::min<int64_t>(end, static_cast<int64_t>(r.n_prompt) - 1) : first;
        rows.first_position = first;
        for (int64_t p = first; p < lp_end; ++p) batch.logit_rows.push_back(row0 + static_cast<int32_t>(p - first));
        if (c.samples) batch.logit_rows.push_back(row0 + static_cast<int32_t>(c.n_tokens - 1));
        rows.count = batch.logit_rows.size() - rows.first;
    }

    logits_.resize(batch.logit_rows.size() * static_cast<size_t>(vocab));
    forward_.run(batch, cache_->geometry(), cache_->pools(), logits_.data());

    for (size_t ci = 0; ci < schedule.chunks.size(); ++ci) {
        const ScheduledChunk &c = schedule.chunks[ci];
        Request &r = *c.request;
        const RowsOf &rows = rows_of[ci];
        // Prompt tokens computed for the first time (recomputation and cache hits excluded).
        const int64_t prompt_end = std::min<int64_t>(r.n_computed + c.n_tokens, static_cast<int64_t>(r.n_prompt));
        const int64_t prompt_from = std::max<int64_t>(r.n_computed, r.prompt_tokens_counted);
        if (prompt_end > prompt_from) {
            n_prompt_tokens_ += prompt_end - prompt_from;
            r.prompt_tokens_counted = prompt_end;
        }
        r.n_computed += c.n_tokens;
        cache_->set_tokens(r.id, r.n_computed, r.tokens);

        // Prompt log-probabilities: row for position p scores token p + 1.
        auto row_logits = [&](size_t k) {
            return std::span<float>(logits_.data() + (rows.first + k) * static_cast<size_t>(vocab),
                                    static_cast<size_t>(vocab));
        };
        if (r.wants_prompt_logprobs()) {
            const int32_t k_top = r.config.prompt_logprobs;
            if (r.prompt_logprobs.empty()) {
                r.prompt_logprobs.push_back(std::numeric_limits<float>::quiet_NaN());
                r.prompt_top_logprobs.assign(static_cast<size_t>(k_top), pagoda_logprob_t{-1, 0.0f});
            }
            for (size_t k = 0; k < rows.count; ++k) {
                int64_t p = rows.first_position + static_cast<int64_t>(k);
                if (p + 1 >= static_cast<int64_t>(r.n_prompt)) break;
                auto lg = row_logits(k);
                r.prompt_logprobs.push_back(sample::token_logprob(lg, r.tokens[static_cast<size_t>(p + 1)]));
                for (const sample::TokenLogprob &t : sample::top_logprobs(lg, k_top))
                    r.prompt_top_logprobs.push_back({t.token, t.logprob});
            }
        }
        if (!c.samples) continue;

        sample::SampleResult s = sample::sample(row_logits(rows.count - 1), r.config.sampling, r.history, r.rng);
        r.tokens.push_back(s.token);
        r.history.add_output(s.token);
        r.cumulative_logprob += s.logprob;
        ++n_generated_;

        Output out;
        out.request_id = r.id;
        out.cumulative_logprob = static_cast<float>(r.cumulative_logprob);
        out.token_ids.push_back(s.token);
        if (r.config.sampling.logprobs >= 0) {
            out.has_logprobs = true;
            out.logprobs.push_back(s.logprob);
            out.n_top_logprobs = r.config.sampling.logprobs;
            for (const sample::TokenLogprob &t : s.top) out.top_logprobs.push_back({t.token, t.logprob});
        }
        if (r.config.prompt_logprobs >= 0 && !r.prompt_logprobs_sent) {
            out.has_prompt_logprobs = true;
            out.n_prompt_top_logprobs = r.config.prompt_logprobs;
            out.prompt_logprobs = std::move(r.prompt_logprobs);
            out.prompt_top_logprobs = std::move(r.prompt_top_logprobs);
            r.prompt_logprobs_sent = true;
        }

        pagoda_finish_reason_t reason = PAGODA_FINISH_NONE;
        bool is_eos = std::find(eos_ids_.begin(), eos_ids_.end(), s.token) != eos_ids_.end();
        bool is_stop = std::find(r.config.stop_token_ids.begin(), r.config.stop_token_ids.end(),
                                 s.token) != r.config.stop_token_ids.end();
        if (is_stop || (is_eos && (r.config.flags & PAGODA_REQUEST_IGNORE_EOS) == 0))
            reason = PAGODA_FINISH_STOP_TOKEN;

        // Text: a stop token adds none (as vLLM); otherwise the detokenizer's complete
        // characters, through the stop-string matcher.
        if (reason == PAGODA_FINISH_NONE && r.detokenizer) {
            std::string piece = r.detokenizer->push(s.token);
            if (r.stop_matcher) {
                sample::StopStringMatcher::Step res = r.stop_matcher->feed(piece);
                out.text = std::move(res.text);
                if (res.stopped) reason = PAGODA_FINISH_STOP_STRING;
            } else {
                out.text = std::move(piece);
            }
        }
        if (reason == PAGODA_FINISH_NONE &&
            static_cast<int64_t>(r.tokens.size()) >= r.max_total_tokens)
            reason = PAGODA_FINISH_LENGTH;

        out.n_prompt_tokens = r.n_prompt;
        out.n_generated = r.n_generated();
        if (reason != PAGODA_FINISH_NONE) {
            finish(r, reason, out);
            remove(&r);
        }
        emit(std::move(out));
    }
}

}  // namespace pagoda::engine
