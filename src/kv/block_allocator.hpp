// Which blocks of a pool are free. Hands out the most recently freed block first, so a busy
// pool keeps reusing warm memory.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::kv {

class BlockAllocator {
public:
    explicit BlockAllocator(int64_t num_blocks);

    int64_t total() const noexcept { return total_; }
    int64_t free_count() const noexcept { return static_cast<int64_t>(free_.size()); }
    int64_t used_count() const noexcept { return total_ - free_count(); }

    // Takes `n` blocks and appends them to `out`, or takes none and returns false.
    bool allocate(int64_t n, std::vector<int32_t> &out);
    // Returns blocks; throws Error(PAGODA_ERR_INTERNAL) for an id out of range or already free,
    // since either means the accounting is broken.
    void release(const std::vector<int32_t> &blocks);

private:
    int64_t total_;
    std::vector<int32_t> free_;
    std::vector<uint8_t> in_use_;
};

}  // namespace pagoda::kv
