// Which blocks of a pool are free. Hands out the most recently freed block first, so a busy
// pool keeps reusing warm memory. Used for the device pool and for host swap space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pagoda::kv {

class BlockAllocator {
public:
    explicit BlockAllocator(int64_t num_blocks);

    int64_t total() const noexcept { return total_; }
    int64_t free_count() const noexcept { return static_cast<int64_t>(free_.size()); }
    int64_t used_count() const noexcept { return total_ - free_count(); }
    bool is_free(int32_t block) const noexcept {
        return block >= 0 && block < total_ && in_use_[static_cast<size_t>(block)] == 0;
    }

    // Takes `n` blocks and appends them to `out`, or takes none and returns false.
    bool allocate(int64_t n, std::vector<int32_t> &out);
    // One block, or -1 when none is free.
    int32_t take();
    // Returns blocks; throws Error(PAGODA_ERR_INTERNAL) for an id out of range or already free,
    // since either means the accounting is broken.
    void release(const std::vector<int32_t> &blocks);
    void release(int32_t block);
    // The free ids (for invariant checks).
    const std::vector<int32_t> &free_ids() const noexcept { return free_; }

private:
    int64_t total_;
    std::vector<int32_t> free_;
    std::vector<uint8_t> in_use_;
};

}  // namespace pagoda::kv
