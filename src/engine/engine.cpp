#include "engine/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "engine/request_check.hpp"
#include "exec/forward_batch.hpp"
#include "pagoda/tokenizer.h"
#include "sample/request_defaults.hpp"

namespace pagoda::engine {

namespace {

// A sequence's own random stream: sequence 0 draws as a single-sequence request with this seed
// would, the others from splitmix64-scrambled seeds, so each is reproducible on its own.
uint64_t sequence_seed(uint64_t seed, int32_t index) {
    if (index == 0) return seed;
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// PAGODA_POOLING_MODEL and _NORMALIZE_MODEL: what the model's files say (pooling_config.hpp),
// else vLLM's defaults for decoder embedding models, last token and L2. A pooling the files
// name but the engine does not do is refused rather than replaced.
void resolve_pooling(const model::PoolingConfig &files, Request &r) {
    int32_t pooling = r.config.pooling;
    if (pooling == PAGODA_POOLING_MODEL) {
        if (files.kind == model::PoolingKind::unsupported)
            throw Error(PAGODA_ERR_UNSUPPORTED,
                        files.source + " asks for " + files.named +
                            " pooling, which the engine does not do: ask for "
                            "PAGODA_POOLING_LAST or PAGODA_POOLING_MEAN explicitly");
        pooling = files.kind == model::PoolingKind::mean ? PAGODA_POOLING_MEAN
                                                         : PAGODA_POOLING_LAST;
    }
    r.mean_pooling = pooling == PAGODA_POOLING_MEAN;
    const int32_t normalize = r.config.embedding_normalize;
    r.normalize = normalize == PAGODA_EMBEDDING_NORMALIZE_MODEL
                      ? files.normalize != 0
                      : normalize == PAGODA_EMBEDDING_NORMALIZE_L2;
}

// A seed from the operating system (getrandom through std::random_device on Linux).
uint64_t fresh_seed() {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ uint64_t(device());
}

}  // namespace

Engine::Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<const tok::Tokenizer> tokenizer,
               std::shared_ptr<kv::KvCache> cache, EngineConfig config)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      cache_(std::move(cache)),
      config_(std::move(config)),
      executor_(exec::make_executor(
          model_, cache_,
          config_.layout ? *config_.layout : mesh::Layout::single_device(int32_t(model_->config().n_layers)),
          config_.pipeline, config_.world)),
      scheduler_(SchedulerConfig{config_.max_num_seqs, config_.max_num_batched_tokens,
                                 config_.preemption, config_.reservation}) {
    if (config_.max_num_seqs < 1 || config_.max_num_batched_tokens < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "max_num_seqs and max_num_batched_tokens must be at least 1");
    const bool graphs = config_.decode_graphs == PAGODA_DECODE_GRAPHS_ON ||
                        (config_.decode_graphs == PAGODA_DECODE_GRAPHS_AUTO &&
                         executor_->devices_apart_from_host());
    executor_->set_decode_mode(graphs ? exec::DecodeMode::Graphs : exec::DecodeMode::OpByOp);
    choose_activation_dtype();
    executor_->set_quantized_activations(config_.quantized_activations);
    setup_kernel_choices();
    sample_on_device_ = (config_.device_sampling == PAGODA_DEVICE_SAMPLING_ON ||
                         (config_.device_sampling == PAGODA_DEVICE_SAMPLING_AUTO &&
                          executor_->devices_apart_from_host())) &&
                        executor_->can_sample_on_device();
    processes_ = executor_->processes();
    eos_ids_ = model_->config().eos_token_ids;
    if (eos_ids_.empty() && tokenizer_ && tokenizer_->eos_token_id() >= 0)
        eos_ids_.push_back(tokenizer_->eos_token_id());
    constraints_ = std::make_unique<ConstraintCache>(tokenizer_, eos_ids_,
                                                     int32_t(model_->config().vocab_size));
}

// Kernel choice by measurement (kernel_choice.h): the file's table, completed by measuring in
// MEASURE mode, pinned on every device; nothing to do under RULES or without a file.
void Engine::setup_kernel_choices() {
    const std::string &path = config_.kernel_choices_file;
    const bool measure = config_.kernel_choice == PAGODA_KERNEL_CHOICE_MEASURE;
    if (config_.kernel_choice == PAGODA_KERNEL_CHOICE_RULES || (path.empty() && !measure)) return;
    auto table = std::make_shared<runtime::KernelChoices>();
    if (!path.empty()) {
        try {
            *table = runtime::KernelChoices::load(path);
        } catch (const Error &e) {
            // MEASURE creates the file.
            if (!measure || e.status() != PAGODA_ERR_NOT_FOUND) throw;
        }
    }
    if (measure) {
        executor_->tune_kernels(*table, config_.max_num_batched_tokens);
        if (!path.empty()) table->save(path);
    }
    executor_->set_kernel_choices(table);
    kernel_choices_ = std::move(table);
}

Engine::~Engine() {
    if (processes_ != nullptr && !follower()) announce_stop();
    std::lock_guard lock(step_mutex_);
    for (auto &[id, r] : requests_)
        for (const auto &s : r->live) cache_->release(s->kv_id);
}

uint64_t Engine::submit_text(std::string_view text, RequestConfig config) {
    const auto &tokenizer = tokenizer_;
    if (!tokenizer)
        throw Error(PAGODA_ERR_NOT_FOUND, model_->source() +
                                              " carries no tokenizer: submit token ids instead");
    std::vector<int32_t> ids = tokenizer->encode(text, sample::prompt_tokenize_flags(config.flags));
    if (ids.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the prompt is empty");
    return submit_tokens(ids, std::move(config));
}

std::unique_ptr<Sequence> Engine::new_sequence(const Request &r, int32_t index,
                                               std::span<const int32_t> prompt) {
    auto s = std::make_unique<Sequence>();
    s->kv_id = next_kv_id_++;
    s->index = index;
    s->tokens.assign(prompt.begin(), prompt.end());
    s->history.add_prompt(prompt);
    s->rng.seed(sequence_seed(r.config.seed, index));
    // Beams are detokenized once at the end, unless stop strings must be watched for: then each
    // beam carries its own text state, copied when it forks.
    if (tokenizer_ && (!r.config.beam_search() || !r.config.stop_strings.empty())) {
        uint32_t flags = (r.config.flags & PAGODA_REQUEST_KEEP_SPECIAL_TEXT) ? 0u : PAGODA_DETOKENIZE_SKIP_SPECIAL;
        s->detokenizer.emplace(tokenizer_, prompt, flags);
    }
    if (!r.config.stop_strings.empty())
        s->stop_matcher.emplace(r.config.stop_strings, (r.config.flags & PAGODA_REQUEST_INCLUDE_STOP_STRING) != 0);
    if (r.config.constraint) s->constraint.emplace(r.config.constraint);
    return s;
}

uint64_t Engine::submit_tokens(std::span<const int32_t> prompt, RequestConfig config) {
    if (follower())
        throw Error(PAGODA_ERR_UNSUPPORTED, "this engine is rank " + std::to_string(processes_->rank()) +
                                                " of a mesh over processes: submit on rank 0, whose steps it follows");
    if (processes_ != nullptr && config.processor != nullptr)
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    "logits_processor: a host function cannot run on the other ranks of a mesh "
                    "over processes; use logit_bias, bad_words or allowed_token_ids, which "
                    "travel with the request");
    // Drawn here, before the intake is broadcast, so every rank samples with the same seed.
    if ((config.flags & PAGODA_REQUEST_FRESH_SEED) != 0) {
        config.seed = fresh_seed();
        config.flags &= ~PAGODA_REQUEST_FRESH_SEED;
    }
    // Over processes the hidden states would have to reach rank 0, and the intake wire carry
    // the request's pooling: neither is done yet.
    if (config.embeds() && (processes_ != nullptr || !executor_->returns_hidden_states()))
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    "embedding requests (PAGODA_REQUEST_EMBED) are not served on a mesh over "
                    "processes; this engine runs on " +
                        std::to_string(config_.layout ? config_.layout->device_count() : 1) +
                        " devices (" + (config_.layout ? config_.layout->describe() : "") +
                        (processes_ != nullptr ? ", over processes" : "") + ")");
    std::unique_ptr<Request> r = make_request(prompt, std::move(config));
    std::lock_guard lock(incoming_mutex_);
    r->id = next_id_++;
    uint64_t id = r->id;
    incoming_.push_back(std::move(r));
    ++live_requests_;
    return id;
}

std::unique_ptr<Request> Engine::make_request(std::span<const int32_t> prompt, RequestConfig config) {
    check_request(config);
    if (config.width() > config_.max_num_seqs || config.width() > config_.max_num_batched_tokens)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the request runs " + std::to_string(config.width()) +
                        " sequences at once (n, best_of or beam_width) but the engine batches at most " +
                        std::to_string(std::min(config_.max_num_seqs, config_.max_num_batched_tokens)) +
                        " (max_num_seqs, max_num_batched_tokens)");
    const model::ModelConfig &mc = model_->config();
    if (prompt.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the prompt is empty");
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= mc.vocab_size)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                            ", outside the vocabulary [0, " + std::to_string(mc.vocab_size) + ")");
    int64_t limit = std::min<int64_t>(mc.max_position, cache_->capacity_tokens());
    // An embedding request generates nothing: its prompt may fill the context.
    if (config.embeds() && static_cast<int64_t>(prompt.size()) > limit)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the prompt has " + std::to_string(prompt.size()) +
                        " tokens; this engine embeds at most " + std::to_string(limit) +
                        " (context " + std::to_string(mc.max_position) + ", KV cache " +
                        std::to_string(cache_->capacity_tokens()) + " tokens)");
    if (!config.embeds() && static_cast<int64_t>(prompt.size()) >= limit)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the prompt has " + std::to_string(prompt.size()) +
                        " tokens; this engine holds at most " + std::to_string(limit) +
                        " per sequence (context " + std::to_string(mc.max_position) +
                        ", KV cache " + std::to_string(cache_->capacity_tokens()) +
                        " tokens), leaving room for at least one generated token");

    sample::normalize_controls(config.controls, mc.vocab_size);
    // Compiled (or found compiled) here, on every rank, so a bad constraint fails the submit.
    if (config.constraint_kind != grammar::ConstraintKind::none)
        config.constraint = constraints_->get(config.constraint_kind, config.constraint_text);

    auto r = std::make_unique<Request>();
    r->config = std::move(config);
    r->n_prompt = prompt.size();
    if (r->config.controls.min_tokens > 0) {
        std::vector<int32_t> &held = r->min_tokens_stop_ids;
        held = r->config.stop_token_ids;
        if ((r->config.flags & PAGODA_REQUEST_IGNORE_EOS) == 0)
            held.insert(held.end(), eos_ids_.begin(), eos_ids_.end());
    }
    r->max_total_tokens =
        std::min<int64_t>(limit, static_cast<int64_t>(prompt.size()) + r->config.max_tokens);
    if (r->config.embeds()) {
        r->max_total_tokens = static_cast<int64_t>(prompt.size());
        resolve_pooling(mc.pooling, *r);
    }
    r->live.push_back(new_sequence(*r, 0, prompt));
    r->submitted_at = MetricsClock::now();
    return r;
}

void Engine::abort(uint64_t id) {
    if (follower())
        throw Error(PAGODA_ERR_UNSUPPORTED, "this engine is rank " + std::to_string(processes_->rank()) +
                                                " of a mesh over processes: abort on rank 0, whose steps it follows");
    if (processes_ == nullptr) {
        std::lock_guard lock(incoming_mutex_);
        auto it = std::find_if(incoming_.begin(), incoming_.end(),
                               [&](const auto &r) { return r->id == id; });
        if (it != incoming_.end()) {
            std::vector<Output> produced = end_request(**it, PAGODA_FINISH_ABORTED);
            metrics_.finished(PAGODA_FINISH_ABORTED, seconds_between((*it)->submitted_at, MetricsClock::now()));
            incoming_.erase(it);
            --live_requests_;
            ++n_finished_;
            deliver(std::move(produced));
            return;
        }
    }
    std::vector<Output> produced;
    {
        std::lock_guard lock(step_mutex_);
        auto it = requests_.find(id);
        if (processes_ != nullptr) {
            // Every rank must end it at the same step, the next one, even one not yet admitted
            // (its submission reaches the followers with the abort).
            std::lock_guard incoming_lock(incoming_mutex_);
            const bool queued =
                std::any_of(incoming_.begin(), incoming_.end(), [&](const auto &r) { return r->id == id; });
            if (it == requests_.end() && !queued)
                throw Error(PAGODA_ERR_NOT_FOUND, "no live request has id " + std::to_string(id));
            pending_aborts_.push_back(id);
            return;
        }
        if (it == requests_.end())
            throw Error(PAGODA_ERR_NOT_FOUND, "no live request has id " + std::to_string(id));
        for (Output &out : end_request(*it->second, PAGODA_FINISH_ABORTED)) emit(std::move(out));
        remove(it->second.get(), PAGODA_FINISH_ABORTED);
        publish_queue_sizes();
        produced.swap(produced_);
    }
    deliver(std::move(produced));
}

void Engine::admit_incoming() {
    std::vector<std::unique_ptr<Request>> batch;
    std::vector<uint64_t> aborts;
    {
        std::lock_guard lock(incoming_mutex_);
        batch.swap(incoming_);
        aborts.swap(pending_aborts_);
    }
    auto queue = [&] {
        for (auto &r : batch) {
            insert_in_order(queues_.waiting, r.get());
            requests_.emplace(r->id, std::move(r));
        }
    };
    if (processes_ != nullptr) {
        try {
            exchange_intake(batch, aborts);
        } catch (const Error &e) {
            // The processes are out of touch for good: every request ends with the error.
            queue();
            std::vector<Request *> all;
            for (auto &[id, r] : requests_) all.push_back(r.get());
            fail_all(all, e.status(), e.what());
            publish_queue_sizes();
            throw;
        }
    }
    queue();
    if (!aborts.empty()) apply_aborts(aborts);
}

// Removes a request from every list and returns its blocks, device and swap.
void Engine::remove(Request *r, pagoda_finish_reason_t reason) {
    metrics_.finished(reason, seconds_between(r->submitted_at, MetricsClock::now()));
    for (const auto &s : r->live) cache_->release(s->kv_id);
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
    s.graph_steps = n_graph_steps_.load();
    s.device_sampled_tokens = n_device_sampled_.load();
    return s;
}

pagoda_engine_metrics_t Engine::metrics() const {
    pagoda_engine_metrics_t m{};
    metrics_.fill(m);
    const EngineStats s = stats();
    m.requests_running = s.requests_running;
    m.requests_waiting = s.requests_waiting;
    m.requests_swapped = s.requests_swapped;
    m.prompt_tokens_computed = s.prompt_tokens;
    m.generation_tokens = s.generated_tokens;
    m.preemptions_recompute = s.preemptions_recompute;
    m.preemptions_swap = s.preemptions_swap;
    m.kv_blocks_used = cache_->used_blocks();
    m.kv_blocks_total = cache_->geometry().num_blocks;
    m.kv_cache_usage = m.kv_blocks_total > 0 ? static_cast<double>(m.kv_blocks_used) /
                                                   static_cast<double>(m.kv_blocks_total)
                                             : 0.0;
    return m;
}

void Engine::record_scheduled(const Schedule &schedule, MetricsClock::time_point now) {
    if (schedule.prefix_query_tokens > 0)
        metrics_.prefix_lookup(schedule.prefix_query_tokens, schedule.prefix_hit_tokens);
    for (const ScheduledChunk &c : schedule.chunks) {
        Request &r = *c.request;
        if (r.was_scheduled) continue;
        r.was_scheduled = true;
        metrics_.scheduled(seconds_between(r.submitted_at, now));
    }
}

// Once per request per step that gave it tokens (every sequence's, beams too): its first
// step gives the time to first token, each later one a gap.
void Engine::record_tokens(Request &r, MetricsClock::time_point now) {
    if (!r.has_tokens) {
        r.has_tokens = true;
        metrics_.first_token(seconds_between(r.submitted_at, now), static_cast<int64_t>(r.n_prompt));
    } else {
        metrics_.token_gap(seconds_between(r.last_tokens_at, now));
    }
    r.last_tokens_at = now;
}

// The text held back for stop strings or an open UTF-8 sequence, flushed into the sequence's
// pending output unless a stop string ended it.
void Engine::flush_text(Sequence &s) {
    std::string tail = s.detokenizer ? s.detokenizer->flush() : std::string();
    if (s.stop_matcher) {
        sample::StopStringMatcher::Step res = s.stop_matcher->feed(tail);
        s.pending.text += res.text;
        if (!res.stopped) s.pending.text += s.stop_matcher->flush();
    } else {
        s.pending.text += tail;
    }
}

// The sequence's pending output, completed with the request's fields; the prompt
// log-probabilities ride on the request's first output.
Output Engine::take_output(Request &r, Sequence &s) {
    Output out = std::move(s.pending);
    s.pending = Output{};
    out.request_id = r.id;
    out.n_prompt_tokens = r.n_prompt;
    out.n_generated = r.n_generated(s);
    out.sequence_index = s.index;
    out.cumulative_logprob = static_cast<float>(s.cumulative_logprob);
    if (out.has_logprobs) out.n_top_logprobs = std::max(0, r.config.sampling.logprobs);
    if (r.config.prompt_logprobs >= 0 && !r.prompt_logprobs_sent && !out.token_ids.empty()) {
        out.has_prompt_logprobs = true;
        out.n_prompt_top_logprobs = r.config.prompt_logprobs;
        out.prompt_logprobs = std::move(r.prompt_logprobs);
        out.prompt_top_logprobs = std::move(r.prompt_top_logprobs);
        r.prompt_logprobs_sent = true;
    }
    return out;
}

// Streaming requests get one last output per live sequence (what it holds back flushed, unless
// it failed); the others, which answer at the end, get one output without tokens.
std::vector<Output> Engine::end_request(Request &r, pagoda_finish_reason_t reason, pagoda_status_t status,
                                        const std::string &error) {
    std::vector<Output> outs;
    if (r.config.streams() || !r.forked) {
        for (const auto &s : r.live) {
            if (reason != PAGODA_FINISH_ERROR) flush_text(*s);
            if (!r.config.streams()) s->pending = Output{};
            outs.push_back(take_output(r, *s));
        }
    }
    if (outs.empty()) {
        Output out;
        out.request_id = r.id;
        out.n_prompt_tokens = r.n_prompt;
        outs.push_back(std::move(out));
    }
    for (Output &out : outs) {
        out.finish_reason = reason;
        out.status = status;
        out.error = error;
    }
    outs.back().request_finished = true;
    return outs;
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
    if (follower()) return;  // rank 0 hands the outputs out
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

void Engine::poll_many(std::vector<Output> &out, size_t max) {
    std::lock_guard lock(output_mutex_);
    for (; max > 0 && !outputs_.empty(); --max) {
        out.push_back(std::move(outputs_.front()));
        outputs_.pop_front();
    }
}

void Engine::fail_all(const std::vector<Request *> &requests, pagoda_status_t status,
                      const std::string &message) {
    for (Request *r : requests) {
        if (requests_.count(r->id) == 0) continue;  // a group listed twice
        for (Output &out : end_request(*r, PAGODA_FINISH_ERROR, status, message)) emit(std::move(out));
        remove(r, PAGODA_FINISH_ERROR);
    }
}

void Engine::step() {
    std::vector<Output> produced;
    try {
        std::lock_guard lock(step_mutex_);
        if (!failure_.empty()) throw Error(PAGODA_ERR_BACKEND, failure_);
        try {
            step_locked();
        } catch (const Error &e) {
            if (processes_ != nullptr)
                failure_ = std::string("the engine's mesh over processes failed for good (make a new mesh and "
                                       "engine): ") + e.what();
            throw;
        }
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

std::string Engine::failed_for_good() const {
    std::lock_guard lock(step_mutex_);
    return failure_;
}

void Engine::step_locked() {
    admit_incoming();
    if (stopped_) return;  // rank 0's engine has gone: there is no step to take
    Schedule schedule = scheduler_.schedule(queues_, *cache_);
    n_preempt_recompute_ += schedule.preempted_by_recompute;
    n_preempt_swap_ += schedule.preempted_by_swap;
    record_scheduled(schedule, MetricsClock::now());
    for (Request *r : schedule.failed)
        fail_all({r}, PAGODA_ERR_OUT_OF_MEMORY,
                 "request " + std::to_string(r->id) + " runs " + std::to_string(r->live.size()) +
                     " sequences and had to be preempted, but the KV cache's swap space lacks room for "
                     "their blocks (requests with several sequences are swapped, never recomputed): "
                     "give the cache more swap_blocks");
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
        for (const ScheduledChunk &c : schedule.chunks)
            if (std::find(scheduled.begin(), scheduled.end(), c.request) == scheduled.end())
                scheduled.push_back(c.request);
        fail_all(scheduled, e.status(), e.what());
        publish_queue_sizes();
        throw;
    }
    ++n_steps_;
    n_batched_seqs_ += static_cast<int64_t>(schedule.chunks.size());
    publish_queue_sizes();
}

}  // namespace pagoda::engine
