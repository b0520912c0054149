// Continuous batching's choice for one step: which requests run and how many of their tokens.
// Running requests go first in (priority, arrival) order (a decode is one token; a prompt still
// being filled takes what the budget leaves: chunked prefill). When a running request cannot
// get a block, the last running request (lowest priority, then latest arrival, as vLLM) is
// preempted: by recompute (blocks freed; it waits to be prefilled again, generated tokens
// included) or by swap (blocks copied to host swap space; recompute when that is full). With
// no preemption in the step, swapped requests come back first; only when none is left do
// waiting requests join, in (priority, arrival) order, while the token budget, the sequence cap
// and the KV blocks allow. Paged admission reuses the prefix cache's blocks; contiguous
// admission reserves prompt + max_tokens at once (the Orca(Max) baseline) and never grows.
//
// A request with several live sequences (parallel sampling, beams) is scheduled as a group:
// all its sequences decode in a step or none does, and it is preempted by swapping all of them
// out (whatever the preemption mode, as vLLM: recomputing would have to restart every sequence
// consistently). When the swap space lacks room for the whole group it is not preempted but
// listed in Schedule::failed, its blocks released, and the engine ends it with an error.
// Swapping copies shared blocks once per sequence, so a group comes back without sharing.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/request.hpp"
#include "kv/kv_cache.hpp"
#include "pagoda/engine.h"

namespace pagoda::engine {

struct ScheduledChunk {
    Request *request = nullptr;
    Sequence *sequence = nullptr;
    int64_t n_tokens = 0;  // tokens from sequence->n_computed on
    bool samples = false;  // the chunk reaches the last token, so the step samples a new one
};

struct Schedule {
    std::vector<ScheduledChunk> chunks;
    std::vector<Request *> preempted;
    std::vector<Request *> failed;  // multi-sequence requests that could not be swapped out
    int64_t preempted_by_recompute = 0;
    int64_t preempted_by_swap = 0;
    int64_t n_tokens = 0;
    // Prefix-cache lookups of this step's admissions, in tokens, as vLLM counts them: every
    // token of each admitted prompt queried, the cached ones hit.
    int64_t prefix_query_tokens = 0;
    int64_t prefix_hit_tokens = 0;
};

struct SchedulerConfig {
    int32_t max_num_seqs = 256;
    int32_t max_num_batched_tokens = 2048;
    pagoda_preemption_t preemption = PAGODA_PREEMPT_AUTO;
    pagoda_kv_reservation_t reservation = PAGODA_KV_PAGED;
};

// The request queues, each kept in runs_before() order.
struct RequestQueues {
    std::deque<Request *> waiting;
    std::vector<Request *> running;
    std::deque<Request *> swapped;
};

// Inserts `r` into `queue` at its runs_before() place.
template <typename Queue>
void insert_in_order(Queue &queue, Request *r) {
    auto at = queue.begin();
    while (at != queue.end() && runs_before(*at, r)) ++at;
    queue.insert(at, r);
}

class Scheduler {
public:
    explicit Scheduler(SchedulerConfig config) : config_(config) {}

    const SchedulerConfig &config() const noexcept { return config_; }

    // Reserves the KV blocks of everything it schedules, moving requests between the queues.
    Schedule schedule(RequestQueues &queues, kv::KvCache &cache) const;

private:
    void preempt(Request *victim, RequestQueues &queues, kv::KvCache &cache, Schedule &out) const;
    bool swap_out_group(Request *r, kv::KvCache &cache) const;
    bool swap_in_group(Request *r, int64_t budget, kv::KvCache &cache) const;
    // Admits `r` with room for its next chunk of at most `budget` tokens; the chunk's size, or
    // -1 when the blocks do not suffice (beside `others_running`, with a watermark left free).
    int64_t admit(Request *r, int64_t budget, kv::KvCache &cache, bool others_running, Schedule &out) const;

    SchedulerConfig config_;
};

}  // namespace pagoda::engine
