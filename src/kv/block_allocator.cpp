#include "kv/block_allocator.hpp"

#include <string>

#include "common/error.hpp"

namespace pagoda::kv {

BlockAllocator::BlockAllocator(int64_t num_blocks)
    : total_(num_blocks), in_use_(static_cast<size_t>(num_blocks), 0) {
    free_.reserve(static_cast<size_t>(num_blocks));
    // Highest id at the bottom of the stack, so block 0 goes out first.
    for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

bool BlockAllocator::allocate(int64_t n, std::vector<int32_t> &out) {
    if (n <= 0) return true;
    if (n > free_count()) return false;
    for (int64_t i = 0; i < n; ++i) out.push_back(take());
    return true;
}

int32_t BlockAllocator::take() {
    if (free_.empty()) return -1;
    int32_t b = free_.back();
    free_.pop_back();
    in_use_[static_cast<size_t>(b)] = 1;
    return b;
}

void BlockAllocator::release(int32_t b) {
    if (b < 0 || b >= total_ || in_use_[static_cast<size_t>(b)] == 0)
        throw Error(PAGODA_ERR_INTERNAL, "KV block " + std::to_string(b) +
                                             " released but not in use (pool of " +
                                             std::to_string(total_) + ")");
    in_use_[static_cast<size_t>(b)] = 0;
    free_.push_back(b);
}

void BlockAllocator::release(const std::vector<int32_t> &blocks) {
    for (int32_t b : blocks) release(b);
}

}  // namespace pagoda::kv
