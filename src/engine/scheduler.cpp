#include "engine/scheduler.hpp"

#include <algorithm>
#include <string>

#include "common/log.hpp"

namespace pagoda::engine {

namespace {

ScheduledChunk chunk_of(Request *r, int64_t n_tokens) {
    return {r, n_tokens, r->n_computed + n_tokens == static_cast<int64_t>(r->tokens.size())};
}

}  // namespace

void Scheduler::preempt(Request *victim, RequestQueues &queues, kv::KvCache &cache, Schedule &out) const {
    out.preempted.push_back(victim);
    // AUTO: every request has one sequence for now, and vLLM recomputes those.
    if (config_.preemption == PAGODA_PREEMPT_SWAP && cache.swap_out(victim->id)) {
        victim->state = RequestState::swapped;
        insert_in_order(queues.swapped, victim);
        ++out.preempted_by_swap;
        log(PAGODA_LOG_DEBUG, "request " + std::to_string(victim->id) + " preempted (swap)");
        return;
    }
    cache.release(victim->id);
    victim->n_computed = 0;
    // Prompt log-probabilities not yet sent are computed again with the prompt.
    victim->prompt_logprobs.clear();
    victim->prompt_top_logprobs.clear();
    victim->state = RequestState::waiting;
    insert_in_order(queues.waiting, victim);
    ++out.preempted_by_recompute;
    log(PAGODA_LOG_DEBUG, "request " + std::to_string(victim->id) + " preempted (recompute)");
}

int64_t Scheduler::admit(Request *r, int64_t budget, kv::KvCache &cache) const {
    const int64_t n_tokens = static_cast<int64_t>(r->tokens.size());
    int64_t cached = 0;
    if (config_.reservation == PAGODA_KV_CONTIGUOUS) {
        cached = cache.admit(r->id, r->tokens, 0, [&](int64_t) { return r->max_total_tokens; },
                             /*share_prefix=*/false);
    } else {
        // At least the last token is computed, so the step has logits to sample from; prompt
        // log-probabilities need every row, so those requests take no cached prefix.
        const int64_t max_cached = r->wants_prompt_logprobs() ? 0 : n_tokens - 1;
        cached = cache.admit(r->id, r->tokens, max_cached,
                             [&](int64_t c) { return c + std::min(n_tokens - c, budget); });
    }
    if (cached < 0) return -1;
    r->n_computed = cached;
    return std::min(r->n_uncomputed(), budget);
}

Schedule Scheduler::schedule(RequestQueues &queues, kv::KvCache &cache) const {
    Schedule out;
    int64_t budget = config_.max_num_batched_tokens;
    auto room = [&] { return budget > 0 && static_cast<int32_t>(out.chunks.size()) < config_.max_num_seqs; };
    auto add = [&](Request *r, int64_t n) {
        out.chunks.push_back(chunk_of(r, n));
        out.n_tokens += n;
        budget -= n;
    };

    std::vector<Request *> &running = queues.running;
    size_t i = 0;
    while (i < running.size() && room()) {
        Request *r = running[i];
        int64_t n = std::min(r->n_uncomputed(), budget);
        bool preempted_self = false;
        while (!cache.reserve(r->id, r->n_computed + n)) {
            Request *victim = running.back();
            running.pop_back();
            preempt(victim, queues, cache, out);
            if (victim == r) {
                preempted_self = true;
                break;
            }
        }
        if (preempted_self) break;  // r was the last running request
        add(r, n);
        ++i;
    }
    if (!out.preempted.empty()) return out;

    while (!queues.swapped.empty() && room()) {
        Request *r = queues.swapped.front();
        int64_t n = std::min(r->n_uncomputed(), budget);
        if (!cache.swap_in(r->id, r->n_computed + n)) break;
        queues.swapped.pop_front();
        r->state = RequestState::running;
        insert_in_order(running, r);
        add(r, n);
    }
    // While a request is swapped out, new ones would take the blocks it needs to come back.
    if (!queues.swapped.empty()) return out;

    while (!queues.waiting.empty() && room()) {
        Request *r = queues.waiting.front();
        int64_t n = admit(r, budget, cache);
        if (n < 0) break;
        queues.waiting.pop_front();
        r->state = RequestState::running;
        insert_in_order(running, r);
        add(r, n);
    }
    return out;
}

}  // namespace pagoda::engine
