// A paged KV cache on one device: a K and a V pool per layer, a block allocator, and the block
// table of every sequence holding blocks. The engine grows a sequence's table before writing
// tokens and releases it when the sequence ends; statistics may be read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kv/block_allocator.hpp"
#include "kv/kv_geometry.hpp"
#include "runtime/device.hpp"

namespace pagoda::kv {

struct KvCacheStats {
    int32_t block_size = 0;
    int64_t blocks_total = 0;
    int64_t blocks_used = 0;
    int64_t slots_used = 0;
    int64_t sequences = 0;
    uint64_t bytes_per_block = 0;
};

class KvCache {
public:
    // Allocates every pool on `device` (kept alive by the cache).
    KvCache(std::shared_ptr<const runtime::Device> device, const KvGeometry &geometry);

    const KvGeometry &geometry() const noexcept { return geometry_; }
    const std::vector<LayerPools> &pools() const noexcept { return pools_; }
    const runtime::Device &device() const noexcept { return *device_; }
    int64_t capacity_tokens() const noexcept { return geometry_.num_blocks * geometry_.block_size; }

    // Grows `seq`'s table (creating it) so it can hold `n_tokens`; all-or-nothing: returns false
    // and changes nothing when the free blocks do not suffice.
    bool reserve(uint64_t seq, int64_t n_tokens);
    // Blocks `reserve(seq, n_tokens)` would still need.
    int64_t blocks_needed(uint64_t seq, int64_t n_tokens) const;
    int64_t free_blocks() const;
    // Records that `seq` now holds `n_tokens` tokens (≤ its reserved capacity).
    void set_tokens(uint64_t seq, int64_t n_tokens);
    // Returns every block of `seq` to the pool; nothing happens for an unknown sequence.
    void release(uint64_t seq);
    // The block table of `seq` (empty for an unknown one). Valid until its next change.
    const std::vector<int32_t> &table(uint64_t seq) const;

    KvCacheStats stats() const;

private:
    struct Sequence {
        std::vector<int32_t> blocks;
        int64_t tokens = 0;
    };

    std::shared_ptr<const runtime::Device> device_;
    KvGeometry geometry_;
    std::vector<runtime::DeviceBuffer> buffers_;
    std::vector<LayerPools> pools_;

    mutable std::mutex mutex_;  // guards what follows, for stats() from other threads
    BlockAllocator allocator_;
    std::unordered_map<uint64_t, Sequence> sequences_;
    int64_t slots_used_ = 0;
};

}  // namespace pagoda::kv
