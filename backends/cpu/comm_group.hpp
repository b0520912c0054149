// Ranks inside one process that form a communicator: the shared state behind the CPU backend's
// collectives. Each rank is a host thread; a collective is a rendezvous of all ranks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pagoda/backend.h"

namespace pagoda::cpu {

class CommGroup {
public:
    explicit CommGroup(int32_t n_ranks);

    int32_t n_ranks() const noexcept { return n_ranks_; }

    // Every rank calls this once; returns when all have joined, or false after `timeout_ms`
    // (then `error` says how many had joined).
    bool join(int32_t rank, int64_t timeout_ms, std::string &error);

    // A collective: publish this rank's buffers, wait for all ranks, run `work` (which may read
    // every rank's published buffers), and wait again so that no rank reuses its buffers while
    // another still reads them. False (with `error`) when the group was aborted.
    struct Buffers {
        const void *send = nullptr;
        void *recv = nullptr;
    };
    template <typename Work>
    bool collective(int32_t rank, Buffers mine, Work &&work, std::string &error) {
        buffers_[size_t(rank)] = mine;
        if (!barrier(error)) return false;
        work(buffers_);
        return barrier(error);
    }

    // Point to point: `send` copies the message into the (from, to) mailbox and returns; `recv`
    // waits for the oldest message from `from`. Sizes must match.
    bool send(int32_t from, int32_t to, const void *data, size_t bytes, std::string &error);
    bool recv(int32_t from, int32_t to, void *data, size_t bytes, std::string &error);

    // Wakes every waiting rank with an error; later collectives fail at once.
    void abort();
    bool aborted();

private:
    bool barrier(std::string &error);

    const int32_t n_ranks_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<bool> joined_;
    int32_t n_joined_ = 0;
    bool aborted_ = false;
    int32_t arrived_ = 0;
    uint64_t barrier_generation_ = 0;
    std::vector<Buffers> buffers_;  // written by each rank before the first barrier
    std::map<std::pair<int32_t, int32_t>, std::deque<std::vector<unsigned char>>> mailboxes_;
};

// Finds or makes the group for a unique id. The entry is dropped once every rank has joined, so
// an id names one communicator only.
std::shared_ptr<CommGroup> comm_group_for(const pagoda_comm_unique_id_t &id, int32_t n_ranks,
                                          std::string &error);
void comm_group_joined(const pagoda_comm_unique_id_t &id);

}  // namespace pagoda::cpu
