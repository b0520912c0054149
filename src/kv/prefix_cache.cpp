#include "kv/prefix_cache.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace pagoda::kv {

PrefixCache::PrefixCache(int64_t num_blocks) : entries_(static_cast<size_t>(num_blocks)) {}

bool PrefixCache::same(const Entry &e, uint64_t parent_serial, std::span<const int32_t> tokens,
                       uint64_t extra_key) const {
    return e.parent_serial == parent_serial && e.extra_key == extra_key &&
           std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end());
}

int32_t PrefixCache::find(uint64_t key, uint64_t parent_serial, std::span<const int32_t> tokens,
                          uint64_t extra_key) const {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return -1;
    return same(entries_[static_cast<size_t>(it->second)], parent_serial, tokens, extra_key) ? it->second : -1;
}

uint64_t PrefixCache::serial_of_equal(uint64_t key, uint64_t parent_serial,
                                      std::span<const int32_t> tokens, uint64_t extra_key) const {
    int32_t b = find(key, parent_serial, tokens, extra_key);
    return b < 0 ? 0 : entries_[static_cast<size_t>(b)].serial;
}

uint64_t PrefixCache::insert(int32_t block, uint64_t key, uint64_t parent_serial,
                             std::span<const int32_t> tokens, uint64_t extra_key) {
    Entry &e = entries_[static_cast<size_t>(block)];
    if (e.serial != 0)
        throw Error(PAGODA_ERR_INTERNAL, "KV block " + std::to_string(block) + " registered twice in the prefix cache");
    if (!by_key_.emplace(key, block).second) return 0;
    e.serial = next_serial_++;
    e.key = key;
    e.parent_serial = parent_serial;
    e.extra_key = extra_key;
    e.tokens.assign(tokens.begin(), tokens.end());
    return e.serial;
}

void PrefixCache::make_evictable(int32_t block) {
    Entry &e = entries_[static_cast<size_t>(block)];
    if (e.serial == 0 || e.in_lru)
        throw Error(PAGODA_ERR_INTERNAL, "KV block " + std::to_string(block) +
                                             " made evictable but it is unregistered or already evictable");
    e.lru_pos = lru_.insert(lru_.end(), block);
    e.in_lru = true;
    ++evictable_count_;
}

void PrefixCache::make_unevictable(int32_t block) {
    Entry &e = entries_[static_cast<size_t>(block)];
    if (!e.in_lru) return;
    lru_.erase(e.lru_pos);
    e.in_lru = false;
    --evictable_count_;
}

int32_t PrefixCache::evict_lru() {
    if (lru_.empty()) return -1;
    int32_t block = lru_.front();
    make_unevictable(block);
    Entry &e = entries_[static_cast<size_t>(block)];
    by_key_.erase(e.key);
    e = Entry{};
    return block;
}

void PrefixCache::check_invariants() const {
    auto bad = [](const std::string &m) { throw Error(PAGODA_ERR_INTERNAL, "prefix cache: " + m); };
    int64_t registered = 0, in_lru = 0;
    for (size_t b = 0; b < entries_.size(); ++b) {
        const Entry &e = entries_[b];
        if (e.in_lru) ++in_lru;
        if (e.serial == 0) {
            if (e.in_lru) bad("unregistered block " + std::to_string(b) + " is in the LRU");
            continue;
        }
        ++registered;
        auto it = by_key_.find(e.key);
        if (it == by_key_.end() || it->second != static_cast<int32_t>(b))
            bad("block " + std::to_string(b) + " is registered but its key does not lead to it");
    }
    if (registered != static_cast<int64_t>(by_key_.size()))
        bad(std::to_string(by_key_.size()) + " keys but " + std::to_string(registered) + " registered blocks");
    if (in_lru != evictable_count_ || static_cast<int64_t>(lru_.size()) != evictable_count_)
        bad("LRU holds " + std::to_string(lru_.size()) + " blocks, flags say " + std::to_string(in_lru) +
            ", count says " + std::to_string(evictable_count_));
}

}  // namespace pagoda::kv
