// One CPU device's memory budget: device memory is host memory, so a "cpu:N" device is bounded
// only by the bytes its buffers may take (config "memory"), counted per allocation.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace pagoda::cpu {

class MemoryBudget {
public:
    explicit MemoryBudget(uint64_t budget) : budget_(budget) {}
    MemoryBudget(const MemoryBudget &) = delete;
    MemoryBudget &operator=(const MemoryBudget &) = delete;

    uint64_t budget() const noexcept { return budget_; }
    uint64_t allocated() const;

    // Sets `bytes` aside before allocating them; false when that would pass the budget, with
    // `left` the bytes still free.
    bool reserve(uint64_t bytes, uint64_t &left);
    // Gives back a reservation whose allocation failed.
    void unreserve(uint64_t bytes) noexcept;
    // Records that `ptr` holds `bytes` reserved bytes, for release. May throw bad_alloc.
    void track(void *ptr, uint64_t bytes);
    // Forgets `ptr` and gives its bytes back; nothing if `ptr` is not one of this device's.
    std::optional<uint64_t> release(void *ptr);

private:
    const uint64_t budget_;
    mutable std::mutex mutex_;
    uint64_t allocated_ = 0;  // reserved bytes, tracked or about to be
    std::unordered_map<void *, uint64_t> sizes_;
};

}  // namespace pagoda::cpu
