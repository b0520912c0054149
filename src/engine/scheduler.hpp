// Continuous batching's choice for one step: which requests run and how many of their tokens.
// Running requests go first, oldest first (a decode is one token; a prompt still being filled
// takes what the budget leaves: chunked prefill); then waiting requests join in arrival order
// while the token budget, the sequence cap and the free KV blocks allow. When a running request
// cannot get a block, the latest-arrived running request is preempted by recompute: its blocks
// are freed and it waits at the head of the queue to be prefilled again, generated tokens
// included. No new request joins in a step that preempted.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/request.hpp"
#include "kv/kv_cache.hpp"

namespace pagoda::engine {

struct ScheduledChunk {
    Request *request = nullptr;
    int64_t n_tokens = 0;  // tokens from request->n_computed on
    bool samples = false;  // the chunk reaches the last token, so the step samples a new one
};

struct Schedule {
    std::vector<ScheduledChunk> chunks;
    std::vector<Request *> preempted;
    int64_t n_tokens = 0;
};

class Scheduler {
public:
    Scheduler(int32_t max_num_seqs, int32_t max_num_batched_tokens)
        : max_num_seqs_(max_num_seqs), max_num_batched_tokens_(max_num_batched_tokens) {}

    // Reserves the KV blocks of everything it schedules. `running` is in arrival order and
    // gains the admitted requests; preempted ones move from `running` to the front of `waiting`.
    Schedule schedule(std::deque<Request *> &waiting, std::vector<Request *> &running,
                      kv::KvCache &cache) const;

private:
    int32_t max_num_seqs_;
    int32_t max_num_batched_tokens_;
};

}  // namespace pagoda::engine
