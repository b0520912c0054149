#include "engine/scheduler.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"

namespace pagoda::engine {

namespace {

// An embedding request's last chunk samples nothing: its hidden states are pooled instead.
ScheduledChunk chunk_of(Request *r, Sequence *s, int64_t n_tokens) {
    const bool ends = s->n_computed + n_tokens == static_cast<int64_t>(s->tokens.size());
    return {r, s, n_tokens, ends && !r->config.embeds()};
}

}  // namespace

// All of the group's sequences or none; blocks they share are swapped once and stay shared.
bool Scheduler::swap_out_group(Request *r, kv::KvCache &cache) const {
    std::vector<uint64_t> ids;
    for (const auto &s : r->live) ids.push_back(s->kv_id);
    return cache.swap_out(ids);
}

// All of the group's sequences or none, each with room for its next token (a lone sequence's
// uncomputed tokens counted up to the step's budget, as at admission).
bool Scheduler::swap_in_group(Request *r, int64_t budget, kv::KvCache &cache) const {
    std::vector<uint64_t> ids;
    std::vector<int64_t> tokens;
    for (const auto &s : r->live) {
        ids.push_back(s->kv_id);
        tokens.push_back(r->live.size() == 1 ? s->n_computed + std::min(s->n_uncomputed(), budget)
                                             : static_cast<int64_t>(s->tokens.size()));
    }
    return cache.swap_in(ids, tokens);
}

void Scheduler::preempt(Request *victim, RequestQueues &queues, kv::KvCache &cache, Schedule &out) const {
    out.preempted.push_back(victim);
    const bool group = victim->live.size() > 1;
    // AUTO: vLLM recomputes single-sequence requests and swaps groups.
    if ((group || config_.preemption == PAGODA_PREEMPT_SWAP) && swap_out_group(victim, cache)) {
        victim->state = RequestState::swapped;
        insert_in_order(queues.swapped, victim);
        ++out.preempted_by_swap;
        log(PAGODA_LOG_DEBUG, "request " + std::to_string(victim->id) + " preempted (swap)");
        return;
    }
    if (group) {
        for (const auto &s : victim->live) cache.release(s->kv_id);
        out.failed.push_back(victim);
        log(PAGODA_LOG_WARN, "request " + std::to_string(victim->id) +
                                 " could not be preempted: its sequences do not fit the swap space");
        return;
    }
    Sequence &s = victim->first();
    cache.release(s.kv_id);
    s.n_computed = 0;
    // Prompt log-probabilities not yet sent are computed again with the prompt.
    victim->prompt_logprobs.clear();
    victim->prompt_top_logprobs.clear();
    victim->pooled_sum.clear();
    victim->state = RequestState::waiting;
    insert_in_order(queues.waiting, victim);
    ++out.preempted_by_recompute;
    log(PAGODA_LOG_DEBUG, "request " + std::to_string(victim->id) + " preempted (recompute)");
}

int64_t Scheduler::admit(Request *r, int64_t budget, kv::KvCache &cache, bool others_running,
                         Schedule &out) const {
    Sequence &s = r->first();
    const int64_t n_tokens = static_cast<int64_t>(s.tokens.size());
    int64_t cached = 0;
    if (config_.reservation == PAGODA_KV_CONTIGUOUS) {
        cached = cache.admit(s.kv_id, s.tokens, 0, [&](int64_t) { return r->max_total_tokens; },
                             /*share_prefix=*/false);
    } else {
        // At least the last token is computed, so the step has logits to sample from (or the
        // last hidden state to pool); prompt log-probabilities and mean pooling need every
        // row, so those requests take no cached prefix.
        const int64_t max_cached = r->needs_every_prompt_row() ? 0 : n_tokens - 1;
        // vLLM's watermark: beside running requests, a new one joins only if 1 % of the blocks
        // stay free after it, so the running ones can grow before anyone is preempted.
        const int64_t keep_free =
            others_running ? std::max<int64_t>(1, cache.geometry().num_blocks / 100) : 0;
        cached = cache.admit(s.kv_id, s.tokens, max_cached,
                             [&](int64_t c) { return c + std::min(n_tokens - c, budget); },
                             /*share_prefix=*/true, /*extra_key=*/0, keep_free);
    }
    if (cached < 0) return -1;
    if (config_.reservation != PAGODA_KV_CONTIGUOUS && cache.prefix_caching()) {
        out.prefix_query_tokens += n_tokens;
        out.prefix_hit_tokens += cached;
    }
    s.n_computed = cached;
    return std::min(s.n_uncomputed(), budget);
}

Schedule Scheduler::schedule(RequestQueues &queues, kv::KvCache &cache) const {
    Schedule out;
    int64_t budget = config_.max_num_batched_tokens;
    auto room = [&] { return budget > 0 && static_cast<int32_t>(out.chunks.size()) < config_.max_num_seqs; };
    auto add = [&](Request *r, Sequence *s, int64_t n) {
        out.chunks.push_back(chunk_of(r, s, n));
        out.n_tokens += n;
        budget -= n;
    };
    // A group needs room for one token of each of its sequences at once.
    auto group_fits = [&](const Request *r) {
        const int64_t k = static_cast<int64_t>(r->live.size());
        return k == 1 || (budget >= k && static_cast<int64_t>(out.chunks.size()) + k <= config_.max_num_seqs);
    };
    auto chunk_size = [&](const Request *r, const Sequence &s) {
        return r->live.size() == 1 ? std::min(s.n_uncomputed(), budget) : s.n_uncomputed();
    };

    std::vector<Request *> &running = queues.running;
    size_t i = 0;
    while (i < running.size() && room()) {
        Request *r = running[i];
        if (!group_fits(r)) break;
        bool preempted_self = false;
        for (const auto &s : r->live) {
            while (!cache.reserve(s->kv_id, s->n_computed + chunk_size(r, *s))) {
                Request *victim = running.back();
                running.pop_back();
                preempt(victim, queues, cache, out);
                if (victim == r) {
                    preempted_self = true;
                    break;
                }
            }
            if (preempted_self) break;
        }
        if (preempted_self) break;  // r was the last running request
        for (const auto &s : r->live) add(r, s.get(), chunk_size(r, *s));
        ++i;
    }
    if (!out.preempted.empty()) return out;

    while (!queues.swapped.empty() && room()) {
        Request *r = queues.swapped.front();
        if (!group_fits(r) || !swap_in_group(r, budget, cache)) break;
        queues.swapped.pop_front();
        r->state = RequestState::running;
        insert_in_order(running, r);
        for (const auto &s : r->live) add(r, s.get(), chunk_size(r, *s));
    }
    // While a request is swapped out, new ones would take the blocks it needs to come back.
    if (!queues.swapped.empty()) return out;

    while (!queues.waiting.empty() && room()) {
        Request *r = queues.waiting.front();
        int64_t n = admit(r, budget, cache, !running.empty(), out);
        if (n < 0) break;
        queues.waiting.pop_front();
        r->state = RequestState::running;
        insert_in_order(running, r);
        add(r, &r->first(), n);
    }
    return out;
}

}  // namespace pagoda::engine
