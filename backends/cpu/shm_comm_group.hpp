// Ranks in several processes of one machine that form a communicator: a POSIX shared-memory
// segment, named by the unique id, holds a staging slot per rank, a channel per ordered pair of
// ranks and the counters they wait on (futexes, so a waiting rank sleeps instead of spinning).
//
// Nothing in the segment is a lock, so a rank killed at any point leaves no lock held: a
// waiting rank wakes every few milliseconds, checks that its peers' processes are alive and that
// its wait has not passed the timeout, and otherwise marks the segment aborted, which fails every
// other rank's wait too.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pagoda/plugin.h"

namespace pagoda::cpu {

// Makes an id whose bytes name a new segment (made by the first rank that joins).
void make_shm_comm_id(pagoda_comm_unique_id_t &id);
// Whether `id` was made by make_shm_comm_id.
bool is_shm_comm_id(const pagoda_comm_unique_id_t &id);

class ShmCommGroup {
public:
    // Maps the segment and waits until all `n_ranks` have joined; the last one to join removes
    // its name, so nothing is left in /dev/shm whatever happens later. Null (with `error`) when
    // the segment cannot be made, disagrees on the rank count, or not all ranks join in time.
    static ShmCommGroup *join(const pagoda_comm_unique_id_t &id, int32_t n_ranks, int32_t rank,
                              int64_t timeout_ms, std::string &error);
    ~ShmCommGroup();
    ShmCommGroup(const ShmCommGroup &) = delete;
    ShmCommGroup &operator=(const ShmCommGroup &) = delete;

    int32_t n_ranks() const noexcept { return n_ranks_; }
    int32_t rank() const noexcept { return rank_; }

    // Every rank's staging slot, `slot_bytes()` each, readable by all after a barrier.
    unsigned char *slot(int32_t rank) const noexcept { return const_cast<unsigned char *>(slots_[size_t(rank)]); }
    // The same, all at once (what the reductions read).
    std::span<const unsigned char *const> slots() const noexcept { return slots_; }
    size_t slot_bytes() const noexcept { return slot_bytes_; }
    // Returns once every rank has arrived; false (with `error`) when the group is aborted, a
    // peer's process has died, or the wait passed the timeout (which then aborts the group).
    bool barrier(std::string &error);

    // A message to or from one peer, through the pair's channel (its length first, so that sizes
    // that differ are an error, not garbage).
    struct Transfer {
        int32_t peer = 0;
        bool outgoing = false;
        unsigned char *data = nullptr;  // read from when outgoing
        size_t bytes = 0;
        uint64_t length = 0;  // the length word, sent or received
        size_t moved = 0;     // bytes of length word and data moved so far
    };
    // Moves every transfer to its end, making progress on each as its channel allows, so that
    // sends and receives issued together (a group) cannot wait on each other. False (with
    // `error`) on abort, a dead peer, or no progress for the timeout.
    bool transfer(std::vector<Transfer> &transfers, std::string &error);

    // Wakes every waiting rank of every process with an error; later calls fail at once.
    void abort() noexcept;
    bool aborted() const noexcept;

private:
    struct Header;
    struct Channel;
    ShmCommGroup(void *base, size_t bytes, int32_t n_ranks, int32_t rank, int64_t timeout_ms);

    Channel &channel(int32_t from, int32_t to) const noexcept;
    unsigned char *channel_data(int32_t from, int32_t to) const noexcept;
    // Moves what the channel allows now; the bytes moved. False (with `error`) when a received
    // length differs from the one expected.
    bool step(Transfer &t, size_t &moved, std::string &error);
    using Clock = std::chrono::steady_clock;
    // Whether a rank that has waited for `what` since `since` may wait on: false (with `error`,
    // after aborting the group) on abort, a dead peer (any, or rank `only`) or the timeout.
    bool may_wait(Clock::time_point since, const std::string &what, std::string &error, int32_t only = -1);
    // Waits until `*word != seen` (a futex word of the segment), as long as may_wait allows.
    bool wait_change(const void *word, uint32_t seen, const std::string &what, std::string &error);
    // Why the group cannot go on, or "" when it can: an abort, or a peer's process gone (any
    // peer, or rank `only`).
    std::string broken(int32_t only = -1) const;

    void *base_;
    size_t bytes_;
    Header *header_;
    int32_t n_ranks_;
    int32_t rank_;
    int64_t timeout_ms_;
    size_t slot_bytes_ = 0;
    size_t channel_bytes_ = 0;
    size_t channels_offset_ = 0;  // where the parts of the segment begin
    size_t data_offset_ = 0;
    std::vector<const unsigned char *> slots_;
};

}  // namespace pagoda::cpu
