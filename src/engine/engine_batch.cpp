// One step's batch: the forward batch assembled from the schedule (token ids, slots, block
// tables, the logit rows each chunk asks for), run on the executor, and its logits turned into
// tokens (on the device where it may pick them, else by the host sampler, parallel sampling
// forking first); embedding requests' hidden rows are pooled instead (pooling.hpp). The
// serving loop around it is engine.cpp; beams are engine_answers.cpp.
#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "formats/block_formats.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "engine/engine.hpp"
#include "engine/pooling.hpp"
#include "exec/forward_batch.hpp"
#include "pagoda/tokenizer.h"

namespace pagoda::engine {

void Engine::run_batch(const Schedule &schedule) {
    const int32_t block_size = cache_->geometry().block_size;
    const int64_t vocab = model_->config().vocab_size;

    exec::ForwardBatch batch;
    batch.query_start.push_back(0);
    for (const ScheduledChunk &c : schedule.chunks)
        batch.max_blocks_per_seq = std::max<int32_t>(
            batch.max_blocks_per_seq, static_cast<int32_t>(cache_->table(c.sequence->kv_id).size()));

    // Per chunk: the first logit row it asked for, and the token position that row is for.
    // Embedding requests: their first hidden row and how many.
    struct RowsOf {
        size_t first = 0;
        int64_t first_position = 0;
        size_t count = 0;
        size_t first_hidden = 0;
        size_t hidden_count = 0;
    };
    std::vector<RowsOf> rows_of(schedule.chunks.size());
    for (size_t ci = 0; ci < schedule.chunks.size(); ++ci) {
        const ScheduledChunk &c = schedule.chunks[ci];
        Request &r = *c.request;
        Sequence &s = *c.sequence;
        const std::vector<int32_t> &table = cache_->table(s.kv_id);
        const int32_t row0 = batch.n_tokens();
        for (int64_t p = s.n_computed; p < s.n_computed + c.n_tokens; ++p) {
            batch.token_ids.push_back(s.tokens[static_cast<size_t>(p)]);
            batch.positions.push_back(static_cast<int32_t>(p));
            batch.slot_mapping.push_back(int64_t{table[static_cast<size_t>(p / block_size)]} * block_size +
                                         p % block_size);
        }
        batch.query_start.push_back(batch.n_tokens());
        int32_t context = static_cast<int32_t>(s.n_computed + c.n_tokens);
        batch.context_lens.push_back(context);
        batch.max_context_len = std::max(batch.max_context_len, context);
        batch.block_tables.insert(batch.block_tables.end(), table.begin(), table.end());
        batch.block_tables.resize(static_cast<size_t>(batch.n_seqs()) * batch.max_blocks_per_seq, 0);

        // Rows whose logits predict a prompt token (for prompt log-probabilities), then the row
        // that samples; the last prompt row may be both.
        RowsOf &rows = rows_of[ci];
        rows.first = batch.logit_rows.size();
        int64_t first = s.n_computed, end = s.n_computed + c.n_tokens;
        int64_t lp_end = r.wants_prompt_logprobs() ? std::min<int64_t>(end, static_cast<int64_t>(r.n_prompt) - 1) : first;
        rows.first_position = first;
        for (int64_t p = first; p < lp_end; ++p) batch.logit_rows.push_back(row0 + static_cast<int32_t>(p - first));
        if (c.samples) batch.logit_rows.push_back(row0 + static_cast<int32_t>(c.n_tokens - 1));
        rows.count = batch.logit_rows.size() - rows.first;
        // Embedding requests pool every prompt row (mean) or the prompt's last (last token).
        rows.first_hidden = batch.hidden_rows.size();
        if (r.config.embeds()) {
            const bool ends = end == static_cast<int64_t>(s.tokens.size());
            const int64_t from = r.mean_pooling ? 0 : ends ? c.n_tokens - 1 : c.n_tokens;
            for (int64_t k = from; k < c.n_tokens; ++k)
                batch.hidden_rows.push_back(row0 + static_cast<int32_t>(k));
        }
        rows.hidden_count = batch.hidden_rows.size() - rows.first_hidden;
    }

    // The device picks the tokens when every logit row samples for a request whose choice the
    // device's SAMPLE makes alone; then only the tokens come back, not the logits.
    bool pick_on_device = sample_on_device_;
    for (size_t ci = 0; pick_on_device && ci < schedule.chunks.size(); ++ci) {
        const ScheduledChunk &c = schedule.chunks[ci];
        pick_on_device = rows_of[ci].count == (c.samples ? 1u : 0u) &&
                         (!c.samples || device_can_pick(*c.request));
    }
    device_sampling_.clear();
    if (pick_on_device) {
        for (const ScheduledChunk &c : schedule.chunks) {
            if (!c.samples) continue;
            const sample::SamplingParams &p = c.request->config.sampling;
            device_sampling_.temperature.push_back(p.temperature);
            device_sampling_.top_k.push_back(p.top_k);
            device_sampling_.top_p.push_back(p.top_p);
            device_sampling_.min_p.push_back(p.min_p);
            // One draw per sampled token, as the host sampler takes; greedy rows take none.
            device_sampling_.uniform.push_back(
                p.temperature > 0.0f ? sample::uniform_unit_f32(c.sequence->rng) : 0.0f);
        }
        picked_tokens_.assign(batch.logit_rows.size(), -1);
        picked_logprobs_.assign(batch.logit_rows.size(), 0.0f);
        pick_on_device = executor_->run_sampled(batch, device_sampling_, picked_tokens_.data(),
                                                picked_logprobs_.data());
        if (!pick_on_device) {
            // The device refused a row (NaN or -inf logits): the host sampler names the request.
            logits_.resize(batch.logit_rows.size() * static_cast<size_t>(vocab));
            executor_->copy_logits(logits_.data());
        }
    } else {
        logits_.resize(batch.logit_rows.size() * static_cast<size_t>(vocab));
        executor_->run(batch, logits_.data());
    }
    if (!batch.hidden_rows.empty()) {
        const size_t dim = static_cast<size_t>(model_->config().hidden_size);
        hidden_.resize(batch.hidden_rows.size() * dim);
        executor_->copy_hidden(hidden_.data());
    }
    n_graph_steps_ = executor_->graph_launches();
    const MetricsClock::time_point tokens_at = MetricsClock::now();  // one clock read per step

    // Requests that sample this step, in batch order, with each live sequence's logits row.
    std::vector<Request *> sampling;
    std::vector<Request *> embedded;  // embedding requests whose prompt is now computed
    std::map<const Sequence *, std::span<float>> sample_row;
    std::map<const Sequence *, size_t> picked_row;  // the logit row a device pick is in
    for (size_t ci = 0; ci < schedule.chunks.size(); ++ci) {
        const ScheduledChunk &c = schedule.chunks[ci];
        Request &r = *c.request;
        Sequence &s = *c.sequence;
        const RowsOf &rows = rows_of[ci];
        // Prompt tokens computed for the first time (recomputation and cache hits excluded).
        const int64_t prompt_end = std::min<int64_t>(s.n_computed + c.n_tokens, static_cast<int64_t>(r.n_prompt));
        const int64_t prompt_from = std::max<int64_t>(s.n_computed, r.prompt_tokens_counted);
        if (prompt_end > prompt_from) {
            n_prompt_tokens_ += prompt_end - prompt_from;
            r.prompt_tokens_counted = prompt_end;
        }
        s.n_computed += c.n_tokens;
        cache_->set_tokens(s.kv_id, s.n_computed, s.tokens);
        if (r.config.embeds()) {
            const size_t dim = static_cast<size_t>(model_->config().hidden_size);
            if (rows.hidden_count > 0)
                add_rows(r.pooled_sum, hidden_.data() + rows.first_hidden * dim,
                         rows.hidden_count, dim);
            if (s.n_computed == static_cast<int64_t>(s.tokens.size())) embedded.push_back(&r);
            continue;
        }

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
                r.prompt_logprobs.push_back(sample::token_logprob(lg, s.tokens[static_cast<size_t>(p + 1)]));
                for (const sample::TokenLogprob &t : sample::top_logprobs(lg, k_top))
                    r.prompt_top_logprobs.push_back({t.token, t.logprob});
            }
        }
        if (!c.samples) continue;
        if (sampling.empty() || sampling.back() != &r) sampling.push_back(&r);
        if (pick_on_device)
            picked_row[&s] = rows.first + rows.count - 1;
        else
            sample_row[&s] = row_logits(rows.count - 1);
    }

    for (Request *r : sampling) {
        record_tokens(*r, tokens_at);  // before sampling, which may end and free the request
        if (pick_on_device) {
            if (!r->forked) fork_samples(*r);  // one sequence (device_can_pick): forks none
            for (const auto &s : r->live) {
                const size_t row = picked_row.at(s.get());
                sample::SampleResult res;
                res.token = picked_tokens_[row];
                res.logprob = picked_logprobs_[row];
                accept_token(*r, *s, res);
                ++n_device_sampled_;
            }
            after_sampling(*r);
            continue;
        }
        // A group is scheduled whole, so every live sequence has its row.
        std::vector<std::span<float>> rows;
        for (const auto &s : r->live) rows.push_back(sample_row.at(s.get()));
        if (r->config.beam_search()) {
            beam_step(*r, std::vector<std::span<const float>>(rows.begin(), rows.end()));
            continue;
        }
        if (!r->config.controls_row()) {
            sample_request(*r, rows);
            continue;
        }
        // What a request's own controls or processor get wrong ends that request alone.
        try {
            sample_request(*r, rows);
        } catch (const sample::ProcessorStopped &stopped) {
            fail_all({r}, PAGODA_ERR_CANCELLED,
                     "request " + std::to_string(r->id) + ": the logits processor returned " +
                         std::to_string(stopped.code));
        } catch (const Error &e) {
            fail_all({r}, e.status(), "request " + std::to_string(r->id) + ": " + e.what());
        }
    }
    for (Request *r : embedded) {
        record_tokens(*r, tokens_at);
        finish_embedding(*r);
    }
}

// An embedding request's one output: the pooled vector, then the request ends ("stop", as
// vLLM's pooling requests), its blocks left to the prefix cache.
void Engine::finish_embedding(Request &r) {
    Output out;
    out.request_id = r.id;
    out.finish_reason = PAGODA_FINISH_STOP_TOKEN;
    out.n_prompt_tokens = r.n_prompt;
    out.request_finished = true;
    out.embedding = pooled_vector(r.pooled_sum, r.mean_pooling ? r.n_prompt : 1, r.normalize);
    emit(std::move(out));
    remove(&r, PAGODA_FINISH_STOP_TOKEN);
}

// Host sampling of one request's live sequences from their rows, then its outputs.
void Engine::sample_request(Request &r, const std::vector<std::span<float>> &rows) {
    if (!r.forked) {
        // Every sequence draws its first token from the prompt's row, which the sampler
        // modifies: each gets a copy.
        fork_samples(r);
        for (const auto &s : r.live) {
            row_scratch_.assign(rows[0].begin(), rows[0].end());
            sample_sequence(r, *s, row_scratch_);
        }
    } else {
        for (size_t i = 0; i < r.live.size(); ++i) sample_sequence(r, *r.live[i], rows[i]);
    }
    after_sampling(r);
}

// An explicit type must be runnable (the forward pass says why not); the default is the
// weights' half type on a device apart from the host, if its backend runs the layer in it.
// Block-quantized weights take F16 there (as llama.cpp's and vLLM's GGUF kernels do) unless the
// host asked for exact products, which f32 activations keep exact end to end.
void Engine::choose_activation_dtype() {
    if (config_.activation_dtype != PAGODA_DTYPE_INVALID) {
        executor_->set_activation_dtype(config_.activation_dtype);
        return;
    }
    pagoda_dtype_t weights = executor_->weight_dtype();
    if (formats::is_block_dtype(weights) && config_.quantized_activations) weights = PAGODA_DTYPE_F16;
    if (!executor_->devices_apart_from_host() ||
        (weights != PAGODA_DTYPE_BF16 && weights != PAGODA_DTYPE_F16))
        return;
    try {
        executor_->set_activation_dtype(weights);
    } catch (const Error &e) {
        pagoda::log(PAGODA_LOG_INFO, std::string("activations stay f32: ") + e.what());
    }
}

// Parallel sampling: the prompt was computed once; the other best_of − 1 sequences share its
// blocks (the partly filled last one is copied when first written: copy-on-write).
void Engine::fork_samples(Request &r) {
    r.forked = true;
    const Sequence &parent = r.first();
    std::span<const int32_t> prompt(parent.tokens.data(), r.n_prompt);
    for (int32_t i = 1; i < r.config.width(); ++i) {
        std::unique_ptr<Sequence> child = new_sequence(r, i, prompt);
        child->n_computed = parent.n_computed;
        cache_->fork(parent.kv_id, child->kv_id);
        r.live.push_back(std::move(child));
    }
}

// Whether the device's SAMPLE picks for `r` as the host sampler would: no logit controls or
// processor (they change the row on the host), no penalties (they need the token history), no
// top log-probabilities (the chosen token's comes back), no beams, and one draw per sequence
// (the first draw of several sequences shares the prompt's row).
bool Engine::device_can_pick(const Request &r) const {
    const sample::SamplingParams &p = r.config.sampling;
    return !r.config.beam_search() && !r.config.controls_row() && p.logprobs <= 0 &&
           p.repetition_penalty == 1.0f &&
           p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f &&
           (r.forked || r.config.width() == 1);
}

namespace {

// The C processor behind the sampler's hook, with what it is told of the sequence.
struct ProcessorCall {
    const RequestConfig *config;
    uint64_t request_id;
    const Sequence *sequence;
    size_t n_prompt;
};

int32_t apply_constraint(void *context, std::span<float> row) {
    static_cast<grammar::ConstraintMatcher *>(context)->mask_logits(row);
    return 0;
}

int32_t call_processor(void *context, std::span<float> row) {
    const ProcessorCall &call = *static_cast<const ProcessorCall *>(context);
    const std::vector<int32_t> &tokens = call.sequence->tokens;
    return call.config->processor(call.config->processor_user, call.request_id,
                                  call.sequence->index, tokens.data(), tokens.size(),
                                  call.n_prompt, row.data(), row.size());
}

}  // namespace

void Engine::sample_sequence(Request &r, Sequence &s, std::span<float> logits) {
    if (!r.config.controls_row()) {
        accept_token(r, s, sample::sample(logits, r.config.sampling, s.history, s.rng));
        return;
    }
    ProcessorCall call{&r.config, r.id, &s, r.n_prompt};
    sample::RowControls controls;
    controls.controls = &r.config.controls;
    controls.min_tokens_stop_ids = r.min_tokens_stop_ids;
    if (r.config.processor != nullptr) controls.processor = {&call_processor, &call};
    if (s.constraint) controls.mask = {&apply_constraint, &*s.constraint};
    accept_token(r, s, sample::sample(logits, r.config.sampling, s.history, s.rng, controls));
}

void Engine::accept_token(Request &r, Sequence &s, const sample::SampleResult &res) {
    // The mask allowed only what the constraint takes; a processor may have unmasked more.
    if (s.constraint && !s.constraint->accept(res.token))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "token " + std::to_string(res.token) +
                        " breaks the request's constraint (the logits processor allowed it)");
    s.tokens.push_back(res.token);
    s.history.add_output(res.token);
    s.cumulative_logprob += res.logprob;
    ++n_generated_;

    Output &out = s.pending;
    out.token_ids.push_back(res.token);
    if (r.config.sampling.logprobs >= 0) {
        out.has_logprobs = true;
        out.logprobs.push_back(res.logprob);
        for (const sample::TokenLogprob &t : res.top) out.top_logprobs.push_back({t.token, t.logprob});
    }

    pagoda_finish_reason_t reason = PAGODA_FINISH_NONE;
    bool is_eos = std::find(eos_ids_.begin(), eos_ids_.end(), res.token) != eos_ids_.end();
    bool is_stop = std::find(r.config.stop_token_ids.begin(), r.config.stop_token_ids.end(),
                             res.token) != r.config.stop_token_ids.end();
    // vLLM's check_stop: no stop token ends a sequence that has not reached min_tokens (they
    // are masked until then, but a processor may unmask them).
    const size_t generated = r.n_generated(s);
    const bool before_min = generated < size_t(r.config.controls.min_tokens);
    if (!before_min && (is_stop || (is_eos && (r.config.flags & PAGODA_REQUEST_IGNORE_EOS) == 0)))
        reason = PAGODA_FINISH_STOP_TOKEN;

    // Text: a stop token adds none (as vLLM); otherwise the detokenizer's complete
    // characters, through the stop-string matcher.
    if (reason == PAGODA_FINISH_NONE && s.detokenizer) {
        std::string piece = s.detokenizer->push(res.token);
        if (s.stop_matcher && generated <= size_t(r.config.controls.min_tokens)) {
            // vLLM (its detokenizer, PR 22014): the text of the first min_tokens tokens ends
            // nothing, though a stop string ending later may begin in it.
            out.text += s.stop_matcher->feed_unchecked(piece);
        } else if (s.stop_matcher) {
            sample::StopStringMatcher::Step step = s.stop_matcher->feed(piece);
            out.text += step.text;
            if (step.stopped) reason = PAGODA_FINISH_STOP_STRING;
        } else {
            out.text += piece;
        }
    }
    // A finished constraint (its value or match complete, or its end token taken) lets nothing
    // follow: the sequence stops here, whatever ignore_eos or min_tokens say.
    if (reason == PAGODA_FINISH_NONE && s.constraint && s.constraint->finished())
        reason = PAGODA_FINISH_STOP_TOKEN;
    if (reason == PAGODA_FINISH_NONE && static_cast<int64_t>(s.tokens.size()) >= r.max_total_tokens)
        reason = PAGODA_FINISH_LENGTH;
    if (reason != PAGODA_FINISH_NONE && reason != PAGODA_FINISH_STOP_STRING) flush_text(s);
    s.finish_reason = reason;
}

// After every live sequence sampled: streaming requests send each sequence's step; finished
// sequences give their blocks back; the request ends with its last sequence.
void Engine::after_sampling(Request &r) {
    std::vector<Output> outs;
    std::vector<std::unique_ptr<Sequence>> still;
    pagoda_finish_reason_t last_reason = PAGODA_FINISH_NONE;  // of the sequence that ended last
    for (auto &s : r.live) {
        const bool ended = s->finish_reason != PAGODA_FINISH_NONE;
        if (ended) last_reason = s->finish_reason;
        if (r.config.streams()) {
            outs.push_back(take_output(r, *s));
            outs.back().finish_reason = s->finish_reason;
        }
        if (!ended) {
            still.push_back(std::move(s));
            continue;
        }
        cache_->release(s->kv_id);
        if (!r.config.streams()) r.done.push_back(std::move(s));
    }
    r.live = std::move(still);
    if (r.live.empty() && r.config.streams()) outs.back().request_finished = true;
    for (Output &out : outs) emit(std::move(out));
    if (!r.live.empty()) return;
    if (!r.config.streams()) answer_at_end(r);
    // The request's reason: its best answer's when it answers at the end (ranked first there).
    remove(&r, r.done.empty() ? last_reason : r.done.front()->finish_reason);
}

}  // namespace pagoda::engine
