// A paged KV cache on one device or over the devices of a mesh: reference-counted blocks lent
// to sequences through block tables, a prefix cache of full computed blocks, and host swap
// space. One block table serves every device: each holds every block id in K and V pools of
// the layers and heads it runs (kv_shard.hpp), and copies and swaps apply to all of them.
// The engine grows a sequence's table before writing tokens and releases it when the sequence
// ends; statistics may be read from any thread.
//
// Every block is in exactly one state: free (in the allocator), used (held by ≥ 1 sequence
// table; refcount = number of tables holding it) or cached (registered in the prefix cache,
// held by none, evictable LRU). free + used + cached = total after every operation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_allocator.hpp"
#include "kv/block_hash.hpp"
#include "kv/kv_geometry.hpp"
#include "kv/kv_shard.hpp"
#include "kv/prefix_cache.hpp"
#include "runtime/device.hpp"

namespace pagoda::kv {

struct KvCacheOptions {
    int64_t swap_blocks = 0;     // host blocks for swapping; 0 = no swap space
    bool prefix_caching = true;
    BlockHashFn hash = default_block_hash;
};

struct KvCacheStats {
    int32_t block_size = 0;
    int64_t blocks_total = 0;
    int64_t blocks_used = 0;
    int64_t blocks_cached = 0;
    int64_t slots_used = 0;    // slots holding tokens, shared blocks counted once
    int64_t slots_wasted = 0;  // blocks_used·block_size − slots_used
    int64_t sequences = 0;     // sequences holding device blocks
    uint64_t bytes_per_block = 0;
    int64_t swap_blocks_total = 0;
    int64_t swap_blocks_used = 0;
    int64_t prefix_queries = 0;
    int64_t prefix_hits = 0;
};

class KvCache {
public:
    // Allocates every pool on `device` (kept alive by the cache) and the swap space.
    KvCache(std::shared_ptr<const runtime::Device> device, const KvGeometry &geometry,
            KvCacheOptions options = {});
    // One shard per entry of `shards`, each on its device; `geometry` is the whole model's
    // (all layers, all KV heads) and gives the dtype, block size and block count.
    KvCache(const std::vector<KvShardSpec> &shards, const KvGeometry &geometry, KvCacheOptions options = {});

    // The whole model's geometry: the block size and count the scheduler works with.
    const KvGeometry &geometry() const noexcept { return geometry_; }
    size_t shard_count() const noexcept { return shards_.size(); }
    const KvShard &shard(size_t i) const { return *shards_.at(i); }
    // The first shard's pools and device: the whole cache when it has one device.
    const std::vector<LayerPools> &pools() const noexcept { return shards_.front()->pools(); }
    const runtime::Device &device() const noexcept { return shards_.front()->device(); }
    int64_t capacity_tokens() const noexcept { return geometry_.num_blocks * geometry_.block_size; }
    bool prefix_caching() const noexcept { return options_.prefix_caching; }
    int64_t swap_blocks_total() const noexcept { return swap_allocator_.total(); }

    // Creates `seq` holding the longest cached prefix of `tokens` (whole blocks, at most
    // `max_cached_tokens` tokens, verified token by token) and grows it to hold
    // `capacity_for(cached_tokens)` tokens. `share_prefix` false: no lookup, and the sequence's
    // blocks are never registered (contiguous reservation). All-or-nothing: returns -1 and
    // changes nothing when the blocks do not suffice; else the cached tokens (which the caller
    // need not compute). `extra_key` separates caches of, say, different adapters; `keep_free`
    // blocks must remain available after the admission.
    int64_t admit(uint64_t seq, std::span<const int32_t> tokens, int64_t max_cached_tokens,
                  const std::function<int64_t(int64_t)> &capacity_for, bool share_prefix = true,
                  uint64_t extra_key = 0, int64_t keep_free = 0);
    // Grows `seq`'s table (creating it) so it can hold `n_tokens`. When the next token would go
    // into a shared, partly filled last block, that block is copied first (copy-on-write).
    // All-or-nothing: returns false and changes nothing when the blocks do not suffice.
    bool reserve(uint64_t seq, int64_t n_tokens);
    // Records that the first `n_tokens` of `token_ids` are computed in `seq`'s blocks; blocks
    // this fills are registered in the prefix cache.
    void set_tokens(uint64_t seq, int64_t n_tokens, std::span<const int32_t> token_ids = {});
    // `child` (new) shares every block of `parent`.
    void fork(uint64_t parent, uint64_t child);
    // Returns every device and host block of `seq`; nothing happens for an unknown sequence.
    void release(uint64_t seq);

    // Moves the blocks of every sequence of `group` (a request's sequences) to host swap space
    // together: a block several of them share is copied once and stays shared on the host, so
    // swapping keeps what fork saved. False, nothing changed, if the swap space lacks room for
    // the group's distinct blocks.
    bool swap_out(std::span<const uint64_t> group);
    bool swap_out(uint64_t seq) { return swap_out(std::span<const uint64_t>(&seq, 1)); }
    // Moves them back: each distinct host block into one new device block, shared by the same
    // sequences as before, and sequence group[i] grown to hold n_tokens[i]. False, nothing
    // changed, if the device lacks blocks.
    bool swap_in(std::span<const uint64_t> group, std::span<const int64_t> n_tokens);
    bool swap_in(uint64_t seq, int64_t n_tokens) {
        return swap_in(std::span<const uint64_t>(&seq, 1), std::span<const int64_t>(&n_tokens, 1));
    }
    bool is_swapped(uint64_t seq) const;

    // Blocks an allocation can get now: free plus evictable cached ones.
    int64_t free_blocks() const;
    // Blocks held by sequences (stats().blocks_used without walking the tables).
    int64_t used_blocks() const;
    // The block table of `seq` (empty for an unknown or swapped one). Valid until its next change.
    const std::vector<int32_t> &table(uint64_t seq) const;
    // Recomputes every count and refcount from the tables; throws INTERNAL on a mismatch.
    void check_invariants() const;
    KvCacheStats stats() const;

private:
    struct Sequence {
        std::vector<int32_t> blocks;       // device blocks (empty while swapped)
        std::vector<int32_t> host_blocks;  // swap blocks while swapped
        int64_t tokens = 0;
        bool swapped = false;
        bool share_prefix = true;
        uint64_t extra_key = 0;
        // The prefix-cache chain over the leading full blocks: how many are linked, and the
        // key and serial of the last; a broken chain (a key collision) registers no further.
        int64_t chain_blocks = 0;
        uint64_t chain_key = 0;
        uint64_t chain_serial = 0;
        bool chain_broken = false;
    };

    int32_t take_block_locked();
    void unref_locked(int32_t block);
    void unref_host_locked(const std::vector<int32_t> &host_blocks);
    // The sequences of `group`, distinct and existing, each swapped out (or resident).
    std::vector<Sequence *> group_locked(std::span<const uint64_t> group, bool swapped, const char *what);
    int64_t available_locked() const { return allocator_.free_count() + prefix_.evictable_count(); }
    void register_full_blocks_locked(Sequence &s, std::span<const int32_t> token_ids);
    void copy_blocks_locked(pagoda_op_t op, pagoda_swap_direction_t direction,
                            const std::vector<int32_t> &pairs);
    Sequence &sequence_locked(uint64_t seq, const char *what);

    KvGeometry geometry_;
    KvCacheOptions options_;
    std::vector<std::unique_ptr<KvShard>> shards_;

    mutable std::mutex mutex_;  // guards what follows, for stats() from other threads
    BlockAllocator allocator_;
    BlockAllocator swap_allocator_;
    PrefixCache prefix_;
    std::vector<int32_t> refcount_;
    std::vector<int32_t> host_refcount_;  // swapped sequences holding each swap block
    std::unordered_map<uint64_t, Sequence> sequences_;
    int64_t prefix_queries_ = 0;
    int64_t prefix_hits_ = 0;
};

}  // namespace pagoda::kv
