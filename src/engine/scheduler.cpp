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

Schedule Scheduler::schedule(std::deque<Request *> &waiting, std::vector<Request *> &running,
                             kv::KvCache &cache) const {
    Schedule out;
    int64_t budget = max_num_batched_tokens_;

    size_t i = 0;
    while (i < running.size() && budget > 0 &&
           static_cast<int32_t>(out.chunks.size()) < max_num_seqs_) {
        Request *r = running[i];
        int64_t n = std::min(r->n_uncomputed(), budget);
        bool preempted_self = false;
        while (!cache.reserve(r->id, r->n_computed + n)) {
            Request *victim = running.back();
            running.pop_back();
            cache.release(victim->id);
            victim->n_computed = 0;
            // Prompt log-probabilities not yet sent are computed again with the prompt.
            victim->prompt_logprobs.clear();
            victim->prompt_top_logprobs.clear();
            waiting.push_front(victim);
            out.preempted.push_back(victim);
            log(PAGODA_LOG_DEBUG, "request " + std::to_string(victim->id) +
                                      " preempted (recompute): no free KV block for request " +
                                      std::to_string(r->id));
            if (victim == r) {
                preempted_self = true;
                break;
            }
        }
        if (preempted_self) break;  // r was the last running request
        out.chunks.push_back(chunk_of(r, n));
        out.n_tokens += n;
        budget -= n;
        ++i;
    }

    if (!out.preempted.empty()) return out;
    while (!waiting.empty() && budget > 0 &&
           static_cast<int32_t>(out.chunks.size()) < max_num_seqs_) {
        Request *r = waiting.front();
        int64_t n = std::min(r->n_uncomputed(), budget);
        if (!cache.reserve(r->id, r->n_computed + n)) break;
        waiting.pop_front();
        running.push_back(r);
        out.chunks.push_back(chunk_of(r, n));
        out.n_tokens += n;
        budget -= n;
    }
    return out;
}

}  // namespace pagoda::engine
