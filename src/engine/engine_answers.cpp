// The engine's answers that come at the end of a request: beam search, step by step over the
// rows of the live beams, and the ranked outputs of best_of > n and beam requests. (The rest of
// the serving loop is engine.cpp.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/engine.hpp"
#include "pagoda/tokenizer.h"

namespace pagoda::engine {

namespace {

// Beam score (vLLM / HF length_penalty): cumulative logprob / length^penalty, length counting
// the generated tokens (a final end-of-sequence token included).
double beam_score(double cumulative, size_t length, float length_penalty) {
    return cumulative / std::pow(static_cast<double>(std::max<size_t>(length, 1)), length_penalty);
}

}  // namespace

// best_of > n and beam search: the n best finished sequences, ranked, each as one output with
// all its tokens and text. Sampling ranks by cumulative logprob, beams by their length-penalised
// score.
void Engine::answer_at_end(Request &r) {
    auto score = [&](const Sequence &s) {
        return r.config.beam_search() ? beam_score(s.cumulative_logprob, r.n_generated(s), r.config.length_penalty)
                                      : s.cumulative_logprob;
    };
    std::stable_sort(r.done.begin(), r.done.end(),
                     [&](const auto &a, const auto &b) { return score(*a) > score(*b); });
    const size_t n = std::min<size_t>(static_cast<size_t>(r.config.n), r.done.size());
    for (size_t rank = 0; rank < n; ++rank) {
        Sequence &s = *r.done[rank];
        if (r.config.beam_search() && s.detokenizer) {
            // Text tracked through the search: what the detokenizer and the stop strings held
            // back, unless a stop string ended the beam.
            if (s.finish_reason != PAGODA_FINISH_STOP_STRING) flush_text(s);
        } else if (r.config.beam_search() && tokenizer_) {
            // The text of the generated tokens; a final stop token adds none (as vLLM).
            uint32_t flags = (r.config.flags & PAGODA_REQUEST_KEEP_SPECIAL_TEXT) ? 0u : PAGODA_DETOKENIZE_SKIP_SPECIAL;
            tok::Detokenizer detok(tokenizer_, std::span<const int32_t>(s.tokens.data(), r.n_prompt), flags);
            size_t end = s.tokens.size() - (s.finish_reason == PAGODA_FINISH_STOP_TOKEN ? 1 : 0);
            for (size_t i = r.n_prompt; i < end; ++i) s.pending.text += detok.push(s.tokens[i]);
            s.pending.text += detok.flush();
        }
        s.index = static_cast<int32_t>(rank);
        Output out = take_output(r, s);
        out.finish_reason = s.finish_reason;
        out.request_finished = rank + 1 == n;
        emit(std::move(out));
    }
}

// One step of beam search (vLLM's beam search, after HF's): each live beam proposes its 2W
// most likely next tokens (raw log-softmax); candidates are ranked by cumulative logprob; an
// end-of-sequence candidate ranked within the top W becomes a finished hypothesis, the others
// fill the W new beams. A beam chosen several times is forked (its blocks shared); beams not
// chosen give their blocks back.
void Engine::beam_step(Request &r, const std::vector<std::span<const float>> &rows) {
    r.forked = true;
    const int32_t width = r.config.beam_width;
    struct Candidate {
        size_t parent = 0;
        int32_t token = -1;
        float logprob = 0.0f;
        double cumulative = 0.0;
        size_t row = 0;
        // With stop strings: the parent's text state after this token, the text it lets
        // through, and whether a stop string ended it there.
        std::optional<tok::Detokenizer> detokenizer;
        std::optional<sample::StopStringMatcher> stop_matcher;
        std::string text;
        bool stopped = false;
    };
    std::vector<Candidate> candidates;
    for (size_t b = 0; b < r.live.size(); ++b)
        for (const sample::TokenLogprob &t : sample::top_logprobs(rows[b], 2 * width)) {
            Candidate c;
            c.parent = c.row = b;
            c.token = t.token;
            c.logprob = t.logprob;
            c.cumulative = r.live[b]->cumulative_logprob + t.logprob;
            candidates.push_back(std::move(c));
        }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate &a, const Candidate &b) { return a.cumulative > b.cumulative; });

    // Appends the candidate's token to `s` (a copy of its parent or the parent itself).
    auto extend = [&](Sequence &s, Candidate &c) {
        s.tokens.push_back(c.token);
        s.cumulative_logprob = c.cumulative;
        s.pending.token_ids.push_back(c.token);
        if (c.detokenizer) {
            s.detokenizer = std::move(c.detokenizer);
            s.stop_matcher = std::move(c.stop_matcher);
            s.pending.text += c.text;
        }
        if (r.config.sampling.logprobs >= 0) {
            s.pending.has_logprobs = true;
            s.pending.logprobs.push_back(c.logprob);
            for (const sample::TokenLogprob &t : sample::top_logprobs(rows[c.row], r.config.sampling.logprobs))
                s.pending.top_logprobs.push_back({t.token, t.logprob});
        }
        ++n_generated_;
    };
    auto copy_of = [&](const Sequence &parent) {
        auto s = std::make_unique<Sequence>();
        s->kv_id = next_kv_id_++;
        s->tokens = parent.tokens;
        s->n_computed = parent.n_computed;
        s->cumulative_logprob = parent.cumulative_logprob;
        s->pending = parent.pending;
        s->detokenizer = parent.detokenizer;
        s->stop_matcher = parent.stop_matcher;
        return s;
    };
    // Runs the candidate's token through a copy of its parent's text state.
    auto watch_stop_strings = [&](Candidate &c) {
        const Sequence &parent = *r.live[c.parent];
        c.detokenizer = parent.detokenizer;
        c.stop_matcher = parent.stop_matcher;
        sample::StopStringMatcher::Step step = c.stop_matcher->feed(c.detokenizer->push(c.token));
        c.text = std::move(step.text);
        c.stopped = step.stopped;
    };
    const bool watch = !r.config.stop_strings.empty() && tokenizer_ != nullptr;
    auto is_end = [&](int32_t token) {
        bool eos = std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
        bool stop = std::find(r.config.stop_token_ids.begin(), r.config.stop_token_ids.end(), token) !=
                    r.config.stop_token_ids.end();
        return stop || (eos && (r.config.flags & PAGODA_REQUEST_IGNORE_EOS) == 0);
    };

    // A candidate that ends its beam (a stop token, or text completing a stop string) is a
    // finished hypothesis when it ranks within the top W.
    std::vector<Candidate> kept;
    for (size_t rank = 0; rank < candidates.size() && static_cast<int32_t>(kept.size()) < width; ++rank) {
        Candidate &c = candidates[rank];
        const bool stop_token = is_end(c.token);
        if (!stop_token && watch) watch_stop_strings(c);
        if (!stop_token && !c.stopped) {
            kept.push_back(std::move(c));
            continue;
        }
        if (rank >= static_cast<size_t>(width)) continue;  // worse than the top W: dropped
        std::unique_ptr<Sequence> hyp = copy_of(*r.live[c.parent]);
        extend(*hyp, c);
        hyp->finish_reason = stop_token ? PAGODA_FINISH_STOP_TOKEN : PAGODA_FINISH_STOP_STRING;
        r.done.push_back(std::move(hyp));  // holds no blocks: its keys are never computed
    }

    // New beams: a parent's first choice extends it in place, later ones fork it (before the
    // parent's own token is appended, which the fork must not see).
    std::vector<bool> claimed(r.live.size(), false);
    std::vector<bool> in_place(kept.size(), false);
    for (size_t k = 0; k < kept.size(); ++k)
        if (!claimed[kept[k].parent]) claimed[kept[k].parent] = in_place[k] = true;
    std::vector<std::unique_ptr<Sequence>> next(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
        if (in_place[k]) continue;
        const Sequence &parent = *r.live[kept[k].parent];
        next[k] = copy_of(parent);
        cache_->fork(parent.kv_id, next[k]->kv_id);
        extend(*next[k], kept[k]);
    }
    for (size_t k = 0; k < kept.size(); ++k) {
        if (!in_place[k]) continue;
        next[k] = std::move(r.live[kept[k].parent]);
        extend(*next[k], kept[k]);
    }
    for (auto &s : r.live)
        if (s) cache_->release(s->kv_id);
    r.live = std::move(next);

    // Done? Max length makes the running beams hypotheses; otherwise W finished hypotheses
    // end it (early_stopping), or (vLLM's heuristic) none of the running beams' current scores
    // beats the worst of the best W finished.
    const float lp = r.config.length_penalty;
    auto score = [&](const Sequence &s) { return beam_score(s.cumulative_logprob, r.n_generated(s), lp); };
    bool finished = r.live.empty();
    if (!finished && static_cast<int64_t>(r.live.front()->tokens.size()) >= r.max_total_tokens) {
        for (auto &s : r.live) s->finish_reason = PAGODA_FINISH_LENGTH;
        finished = true;
    } else if (!finished && static_cast<int32_t>(r.done.size()) >= width) {
        if (r.config.early_stopping == 1) {
            finished = true;
        } else {
            std::vector<double> done_scores;
            for (const auto &s : r.done) done_scores.push_back(score(*s));
            std::sort(done_scores.begin(), done_scores.end(), std::greater<>());
            double best_running = -std::numeric_limits<double>::infinity();
            for (const auto &s : r.live) best_running = std::max(best_running, score(*s));
            finished = done_scores[static_cast<size_t>(width) - 1] >= best_running;
        }
    }
    if (!finished) return;
    for (auto &s : r.live) {
        cache_->release(s->kv_id);
        if (s->finish_reason == PAGODA_FINISH_LENGTH) r.done.push_back(std::move(s));
    }
    r.live.clear();
    answer_at_end(r);
    remove(&r, r.done.empty() ? PAGODA_FINISH_LENGTH : r.done.front()->finish_reason);
}

}  // namespace pagoda::engine
