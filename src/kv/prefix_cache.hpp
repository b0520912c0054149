// The prefix cache's index: which device blocks hold which full, computed blocks of tokens,
// and the least-recently-used order of those no sequence holds (evictable). A block is
// registered once it is full and computed; its registration carries a serial number that is
// never reused, and a block's entry names its parent's serial, so a lookup that walks a chain
// block by block only follows blocks computed after exactly the blocks it already matched.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace pagoda::kv {

class PrefixCache {
public:
    explicit PrefixCache(int64_t num_blocks);

    // The block registered under `key` whose tokens, extra key and parent serial equal these,
    // or -1 (none, or a different block under the same key: a hash collision).
    int32_t find(uint64_t key, uint64_t parent_serial, std::span<const int32_t> tokens,
                 uint64_t extra_key) const;
    // Registers `block` under `key`; returns its new serial, or 0 when `key` is taken (the
    // block then stays unregistered and is freed as usual).
    uint64_t insert(int32_t block, uint64_t key, uint64_t parent_serial,
                    std::span<const int32_t> tokens, uint64_t extra_key);
    // The serial of the entry under `key` if it holds exactly these contents, else 0.
    uint64_t serial_of_equal(uint64_t key, uint64_t parent_serial, std::span<const int32_t> tokens,
                             uint64_t extra_key) const;

    bool registered(int32_t block) const { return entries_[static_cast<size_t>(block)].serial != 0; }
    uint64_t serial(int32_t block) const { return entries_[static_cast<size_t>(block)].serial; }
    uint64_t key(int32_t block) const { return entries_[static_cast<size_t>(block)].key; }
    int64_t size() const noexcept { return static_cast<int64_t>(by_key_.size()); }

    // LRU of registered blocks that no sequence holds: released blocks go to the back; eviction
    // takes the front and forgets its registration.
    void make_evictable(int32_t block);
    void make_unevictable(int32_t block);
    bool evictable(int32_t block) const { return entries_[static_cast<size_t>(block)].in_lru; }
    int64_t evictable_count() const noexcept { return evictable_count_; }
    int32_t evict_lru();  // -1 when none

    // Throws INTERNAL when the index and the LRU disagree with each other.
    void check_invariants() const;

private:
    struct Entry {
        uint64_t serial = 0;  // 0 = not registered
        uint64_t key = 0;
        uint64_t parent_serial = 0;
        uint64_t extra_key = 0;
        std::vector<int32_t> tokens;
        bool in_lru = false;
        std::list<int32_t>::iterator lru_pos;
    };
    bool same(const Entry &e, uint64_t parent_serial, std::span<const int32_t> tokens,
              uint64_t extra_key) const;

    std::vector<Entry> entries_;
    std::unordered_map<uint64_t, int32_t> by_key_;
    std::list<int32_t> lru_;  // front = least recently released
    int64_t evictable_count_ = 0;
    uint64_t next_serial_ = 1;
};

}  // namespace pagoda::kv
