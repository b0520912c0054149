#include "kv/kv_cache.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "common/error.hpp"
#include "pagoda/ops.h"

namespace pagoda::kv {

namespace {

int64_t blocks_for(int64_t tokens, int32_t block_size) {
    return (tokens + block_size - 1) / block_size;
}

[[noreturn]] void broken(const std::string &message) {
    throw Error(PAGODA_ERR_INTERNAL, "KV cache accounting: " + message);
}

}  // namespace

namespace {

std::vector<KvShardSpec> whole_model_on(std::shared_ptr<const runtime::Device> device, const KvGeometry &g) {
    return {KvShardSpec{std::move(device), 0, int32_t(g.n_layers), 0, int32_t(g.n_kv_heads)}};
}

}  // namespace

KvCache::KvCache(std::shared_ptr<const runtime::Device> device, const KvGeometry &geometry,
                 KvCacheOptions options)
    : KvCache(whole_model_on(std::move(device), geometry), geometry, options) {}

KvCache::KvCache(const std::vector<KvShardSpec> &shards, const KvGeometry &geometry, KvCacheOptions options)
    : geometry_(geometry),
      options_(options),
      allocator_(geometry.num_blocks),
      swap_allocator_(options.swap_blocks),
      prefix_(geometry.num_blocks),
      refcount_(static_cast<size_t>(geometry.num_blocks), 0),
      host_refcount_(static_cast<size_t>(swap_allocator_.total()), 0) {
    if (shards.empty()) throw Error(PAGODA_ERR_INTERNAL, "KV cache: no device to hold it");
    if (options_.hash == nullptr) options_.hash = default_block_hash;
    for (const KvShardSpec &spec : shards)
        shards_.push_back(std::make_unique<KvShard>(spec, geometry, swap_allocator_.total()));
}

KvCache::Sequence &KvCache::sequence_locked(uint64_t seq, const char *what) {
    auto it = sequences_.find(seq);
    if (it == sequences_.end())
        throw Error(PAGODA_ERR_INTERNAL, std::string(what) + ": KV cache has no sequence " + std::to_string(seq));
    return it->second;
}

// A free block, else the least recently used cached one (its prefix entry is forgotten).
int32_t KvCache::take_block_locked() {
    int32_t b = allocator_.take();
    if (b < 0) b = prefix_.evict_lru();
    if (b < 0) broken("no block to take although the count said there was one");
    refcount_[static_cast<size_t>(b)] = 1;
    return b;
}

// One table fewer holds `block`; with none left it becomes cached (registered) or free.
void KvCache::unref_locked(int32_t block) {
    int32_t &rc = refcount_[static_cast<size_t>(block)];
    if (rc <= 0) broken("block " + std::to_string(block) + " released with refcount " + std::to_string(rc));
    if (--rc > 0) return;
    if (prefix_.registered(block))
        prefix_.make_evictable(block);
    else
        allocator_.release(block);
}

void KvCache::copy_blocks_locked(pagoda_op_t op, pagoda_swap_direction_t direction,
                                 const std::vector<int32_t> &pairs) {
    for (const auto &shard : shards_) shard->copy_blocks(op, direction, pairs, swap_allocator_.total());
}

int64_t KvCache::admit(uint64_t seq, std::span<const int32_t> tokens, int64_t max_cached_tokens,
                       const std::function<int64_t(int64_t)> &capacity_for, bool share_prefix,
                       uint64_t extra_key, int64_t keep_free) {
    std::lock_guard lock(mutex_);
    if (sequences_.count(seq) != 0)
        throw Error(PAGODA_ERR_INTERNAL, "KV cache: sequence " + std::to_string(seq) + " admitted twice");
    const int32_t bs = geometry_.block_size;
    Sequence s;
    s.share_prefix = share_prefix && options_.prefix_caching;
    s.extra_key = extra_key;

    // Walk the chain of full blocks while each is found and its contents verified.
    std::vector<int32_t> hits;
    int64_t looked_up = 0;
    if (s.share_prefix && max_cached_tokens >= bs) {
        const int64_t n_full = std::min<int64_t>(max_cached_tokens, static_cast<int64_t>(tokens.size())) / bs;
        looked_up = n_full;
        for (int64_t i = 0; i < n_full; ++i) {
            std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
            uint64_t key = options_.hash(s.chain_key, block_tokens, extra_key);
            int32_t b = prefix_.find(key, s.chain_serial, block_tokens, extra_key);
            if (b < 0) break;
            hits.push_back(b);
            s.chain_key = key;
            s.chain_serial = prefix_.serial(b);
            s.chain_blocks = i + 1;
        }
    }
    const int64_t cached_tokens = static_cast<int64_t>(hits.size()) * bs;
    const int64_t need = std::max<int64_t>(0, blocks_for(capacity_for(cached_tokens), bs) -
                                                  static_cast<int64_t>(hits.size()));
    int64_t hits_evictable = 0;
    for (int32_t b : hits) hits_evictable += prefix_.evictable(b) ? 1 : 0;
    if (need > available_locked() - hits_evictable - keep_free) return -1;

    for (int32_t b : hits) {
        prefix_.make_unevictable(b);
        ++refcount_[static_cast<size_t>(b)];
    }
    s.blocks = std::move(hits);
    for (int64_t i = 0; i < need; ++i) s.blocks.push_back(take_block_locked());
    s.tokens = cached_tokens;
    prefix_queries_ += looked_up;
    prefix_hits_ += s.chain_blocks;
    sequences_.emplace(seq, std::move(s));
    return cached_tokens;
}

bool KvCache::reserve(uint64_t seq, int64_t n_tokens) {
    std::lock_guard lock(mutex_);
    const int32_t bs = geometry_.block_size;
    auto it = sequences_.find(seq);
    const bool created = it == sequences_.end();
    if (created) {
        it = sequences_.emplace(seq, Sequence{}).first;
        it->second.share_prefix = options_.prefix_caching;
    }
    Sequence &s = it->second;
    if (s.swapped)
        throw Error(PAGODA_ERR_INTERNAL, "KV cache: sequence " + std::to_string(seq) + " grown while swapped out");
    const int64_t new_blocks = std::max<int64_t>(0, blocks_for(n_tokens, bs) - static_cast<int64_t>(s.blocks.size()));
    // Copy-on-write: the next token lands in the partly filled last block, which another
    // sequence (a fork) still reads.
    const size_t last = static_cast<size_t>(s.tokens / bs);
    const bool cow = n_tokens > s.tokens && s.tokens % bs != 0 && last < s.blocks.size() &&
                     refcount_[static_cast<size_t>(s.blocks[last])] > 1;
    if (new_blocks + (cow ? 1 : 0) > available_locked()) {
        if (created) sequences_.erase(it);
        return false;
    }
    if (cow) {
        const int32_t old_block = s.blocks[last];
        const int32_t copy = take_block_locked();
        try {
            copy_blocks_locked(PAGODA_OP_COPY_BLOCKS, PAGODA_SWAP_OUT, {old_block, copy});
        } catch (...) {
            unref_locked(copy);
            throw;
        }
        s.blocks[last] = copy;
        unref_locked(old_block);
    }
    for (int64_t i = 0; i < new_blocks; ++i) s.blocks.push_back(take_block_locked());
    return true;
}

void KvCache::register_full_blocks_locked(Sequence &s, std::span<const int32_t> token_ids) {
    const int32_t bs = geometry_.block_size;
    const int64_t full = std::min<int64_t>(s.tokens, static_cast<int64_t>(token_ids.size())) / bs;
    while (!s.chain_broken && s.chain_blocks < full) {
        const int64_t i = s.chain_blocks;
        std::span<const int32_t> block_tokens = token_ids.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
        const uint64_t key = options_.hash(s.chain_key, block_tokens, s.extra_key);
        const int32_t b = s.blocks[static_cast<size_t>(i)];
        uint64_t serial = prefix_.registered(b) ? prefix_.serial(b)
                                                : prefix_.insert(b, key, s.chain_serial, block_tokens, s.extra_key);
        // The key is taken: by a block with these very contents (two sequences computed the
        // same prefix), whose chain we follow; or by a collision, which ends our chain.
        if (serial == 0) serial = prefix_.serial_of_equal(key, s.chain_serial, block_tokens, s.extra_key);
        if (serial == 0) {
            s.chain_broken = true;
            break;
        }
        s.chain_key = key;
        s.chain_serial = serial;
        ++s.chain_blocks;
    }
}

void KvCache::set_tokens(uint64_t seq, int64_t n_tokens, std::span<const int32_t> token_ids) {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    const int64_t capacity = it == sequences_.end() || it->second.swapped
                                 ? 0
                                 : static_cast<int64_t>(it->second.blocks.size()) * geometry_.block_size;
    if (it == sequences_.end() || n_tokens < 0 || n_tokens > capacity ||
        n_tokens < it->second.chain_blocks * geometry_.block_size)
        throw Error(PAGODA_ERR_INTERNAL, "sequence " + std::to_string(seq) + " set to " +
                                             std::to_string(n_tokens) + " tokens but holds " +
                                             std::to_string(capacity) + " slots");
    it->second.tokens = n_tokens;
    if (it->second.share_prefix && !token_ids.empty()) register_full_blocks_locked(it->second, token_ids);
}

void KvCache::fork(uint64_t parent, uint64_t child) {
    std::lock_guard lock(mutex_);
    if (sequences_.count(child) != 0)
        throw Error(PAGODA_ERR_INTERNAL, "KV cache: fork into existing sequence " + std::to_string(child));
    Sequence &p = sequence_locked(parent, "fork");
    if (p.swapped) throw Error(PAGODA_ERR_INTERNAL, "KV cache: fork of swapped sequence " + std::to_string(parent));
    Sequence c = p;
    // Only blocks holding tokens are shared; the parent's spare reserved blocks stay its own.
    c.blocks.resize(static_cast<size_t>(blocks_for(p.tokens, geometry_.block_size)));
    for (int32_t b : c.blocks) ++refcount_[static_cast<size_t>(b)];
    sequences_.emplace(child, std::move(c));
}

void KvCache::release(uint64_t seq) {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    if (it == sequences_.end()) return;
    // Tail first, so a prefix's last blocks reach the LRU's front and are evicted before its root.
    for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) unref_locked(*b);
    unref_host_locked(it->second.host_blocks);
    sequences_.erase(it);
}

std::vector<KvCache::Sequence *> KvCache::group_locked(std::span<const uint64_t> group, bool swapped,
                                                      const char *what) {
    std::vector<Sequence *> out;
    for (uint64_t seq : group) {
        Sequence &s = sequence_locked(seq, what);
        if (s.swapped != swapped)
            throw Error(PAGODA_ERR_INTERNAL, std::string(what) + ": KV sequence " + std::to_string(seq) +
                                                 (swapped ? " is not swapped out" : " is already swapped out"));
        if (std::find(out.begin(), out.end(), &s) != out.end())
            throw Error(PAGODA_ERR_INTERNAL, std::string(what) + ": KV sequence " + std::to_string(seq) +
                                                 " appears twice in the group");
        out.push_back(&s);
    }
    return out;
}

// One holder fewer for each swap block; a block nobody holds goes back to the swap space.
void KvCache::unref_host_locked(const std::vector<int32_t> &host_blocks) {
    for (int32_t h : host_blocks) {
        int32_t &rc = host_refcount_[static_cast<size_t>(h)];
        if (rc <= 0) broken("swap block " + std::to_string(h) + " released with refcount " + std::to_string(rc));
        if (--rc == 0) swap_allocator_.release(h);
    }
}

bool KvCache::swap_out(std::span<const uint64_t> group) {
    std::lock_guard lock(mutex_);
    const std::vector<Sequence *> seqs = group_locked(group, false, "swap_out");
    // Each distinct device block, in order of first appearance, gets one swap block.
    std::vector<int32_t> distinct;
    std::unordered_map<int32_t, size_t> index;
    for (const Sequence *s : seqs)
        for (int32_t b : s->blocks)
            if (index.emplace(b, distinct.size()).second) distinct.push_back(b);
    std::vector<int32_t> host;
    if (!swap_allocator_.allocate(static_cast<int64_t>(distinct.size()), host)) return false;
    std::vector<int32_t> pairs;
    for (size_t i = 0; i < host.size(); ++i) pairs.insert(pairs.end(), {distinct[i], host[i]});
    try {
        copy_blocks_locked(PAGODA_OP_SWAP_BLOCKS, PAGODA_SWAP_OUT, pairs);
    } catch (...) {
        swap_allocator_.release(host);
        throw;
    }
    for (Sequence *s : seqs) {
        for (int32_t b : s->blocks) {
            const int32_t h = host[index.at(b)];
            s->host_blocks.push_back(h);
            ++host_refcount_[static_cast<size_t>(h)];
        }
        for (auto b = s->blocks.rbegin(); b != s->blocks.rend(); ++b) unref_locked(*b);
        s->blocks.clear();
        s->swapped = true;
    }
    return true;
}

bool KvCache::swap_in(std::span<const uint64_t> group, std::span<const int64_t> n_tokens) {
    std::lock_guard lock(mutex_);
    if (n_tokens.size() != group.size())
        throw Error(PAGODA_ERR_INTERNAL, "swap_in: " + std::to_string(group.size()) + " sequences but " +
                                             std::to_string(n_tokens.size()) + " token counts");
    const std::vector<Sequence *> seqs = group_locked(group, true, "swap_in");
    std::vector<int32_t> distinct;  // host blocks in order of first appearance
    std::unordered_map<int32_t, size_t> index;
    std::vector<int32_t> holders;  // sequences holding each distinct block
    int64_t extra = 0;             // blocks beyond the swapped ones, for the tokens to come
    for (size_t i = 0; i < seqs.size(); ++i) {
        for (int32_t h : seqs[i]->host_blocks) {
            auto [it, added] = index.emplace(h, distinct.size());
            if (added) {
                distinct.push_back(h);
                holders.push_back(0);
            }
            ++holders[it->second];
        }
        extra += std::max<int64_t>(
            0, blocks_for(n_tokens[i], geometry_.block_size) - static_cast<int64_t>(seqs[i]->host_blocks.size()));
    }
    if (static_cast<int64_t>(distinct.size()) + extra > available_locked()) return false;
    std::vector<int32_t> blocks;
    for (size_t i = 0; i < distinct.size(); ++i) blocks.push_back(take_block_locked());
    std::vector<int32_t> pairs;
    for (size_t i = 0; i < distinct.size(); ++i) pairs.insert(pairs.end(), {distinct[i], blocks[i]});
    try {
        copy_blocks_locked(PAGODA_OP_SWAP_BLOCKS, PAGODA_SWAP_IN, pairs);
    } catch (...) {
        for (int32_t b : blocks) unref_locked(b);
        throw;
    }
    for (size_t i = 0; i < blocks.size(); ++i) refcount_[static_cast<size_t>(blocks[i])] = holders[i];
    for (size_t i = 0; i < seqs.size(); ++i) {
        Sequence &s = *seqs[i];
        for (int32_t h : s.host_blocks) s.blocks.push_back(blocks[index.at(h)]);
        while (static_cast<int64_t>(s.blocks.size()) < blocks_for(n_tokens[i], geometry_.block_size))
            s.blocks.push_back(take_block_locked());
        unref_host_locked(s.host_blocks);
        s.host_blocks.clear();
        s.swapped = false;
    }
    return true;
}

bool KvCache::is_swapped(uint64_t seq) const {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    return it != sequences_.end() && it->second.swapped;
}

int64_t KvCache::free_blocks() const {
    std::lock_guard lock(mutex_);
    return available_locked();
}

int64_t KvCache::used_blocks() const {
    std::lock_guard lock(mutex_);
    return geometry_.num_blocks - available_locked();
}

const std::vector<int32_t> &KvCache::table(uint64_t seq) const {
    static const std::vector<int32_t> empty;
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    return it == sequences_.end() ? empty : it->second.blocks;
}

void KvCache::check_invariants() const {
    std::lock_guard lock(mutex_);
    const int32_t bs = geometry_.block_size;
    std::vector<int32_t> refs(refcount_.size(), 0);
    std::vector<int32_t> host_refs(static_cast<size_t>(swap_allocator_.total()), 0);
    for (const auto &[id, s] : sequences_) {
        const std::string who = "sequence " + std::to_string(id);
        if (s.swapped && !s.blocks.empty()) broken(who + " is swapped out but holds device blocks");
        if (!s.swapped && !s.host_blocks.empty()) broken(who + " is resident but holds swap blocks");
        const size_t held = s.swapped ? s.host_blocks.size() : s.blocks.size();
        if (s.tokens < 0 || s.tokens > static_cast<int64_t>(held) * bs)
            broken(who + " holds " + std::to_string(s.tokens) + " tokens in " + std::to_string(held) + " blocks");
        for (int32_t b : s.blocks) {
            if (b < 0 || b >= geometry_.num_blocks) broken(who + " holds block " + std::to_string(b));
            ++refs[static_cast<size_t>(b)];
        }
        for (int32_t h : s.host_blocks) {
            if (h < 0 || h >= swap_allocator_.total() || swap_allocator_.is_free(h))
                broken(who + " holds swap block " + std::to_string(h) + ", out of range or free");
            ++host_refs[static_cast<size_t>(h)];
        }
    }
    int64_t host_used = 0;
    for (size_t h = 0; h < host_refs.size(); ++h) {
        if (host_refs[h] != host_refcount_[h])
            broken("swap block " + std::to_string(h) + " has refcount " + std::to_string(host_refcount_[h]) +
                   " but " + std::to_string(host_refs[h]) + " swapped tables hold it");
        host_used += host_refs[h] > 0;
    }
    int64_t n_free = 0, n_used = 0, n_cached = 0;
    for (size_t b = 0; b < refs.size(); ++b) {
        const int32_t block = static_cast<int32_t>(b);
        if (refs[b] != refcount_[b])
            broken("block " + std::to_string(b) + " has refcount " + std::to_string(refcount_[b]) + " but " +
                   std::to_string(refs[b]) + " tables hold it");
        const bool is_free = allocator_.is_free(block), cached = prefix_.evictable(block);
        if (refs[b] > 0) {
            ++n_used;
            if (is_free || cached) broken("held block " + std::to_string(b) + " is also free or cached");
        } else {
            if (is_free == cached) broken("unheld block " + std::to_string(b) + " is neither free nor cached, or both");
            if (is_free && prefix_.registered(block)) broken("free block " + std::to_string(b) + " is still registered");
            (is_free ? n_free : n_cached)++;
        }
    }
    if (n_free != allocator_.free_count() || n_cached != prefix_.evictable_count() ||
        n_free + n_used + n_cached != geometry_.num_blocks)
        broken("free " + std::to_string(n_free) + " (allocator says " + std::to_string(allocator_.free_count()) +
               ") + used " + std::to_string(n_used) + " + cached " + std::to_string(n_cached) + " (LRU says " +
               std::to_string(prefix_.evictable_count()) + ") != total " + std::to_string(geometry_.num_blocks));
    if (host_used != swap_allocator_.used_count())
        broken("swapped sequences hold " + std::to_string(host_used) + " swap blocks, the allocator lent " +
               std::to_string(swap_allocator_.used_count()));
    prefix_.check_invariants();
}

KvCacheStats KvCache::stats() const {
    std::lock_guard lock(mutex_);
    const int32_t bs = geometry_.block_size;
    KvCacheStats s;
    s.block_size = bs;
    s.blocks_total = geometry_.num_blocks;
    s.blocks_cached = prefix_.evictable_count();
    s.blocks_used = s.blocks_total - allocator_.free_count() - s.blocks_cached;
    // Slots holding tokens, a shared block counted once with its fullest holder's fill.
    std::unordered_map<int32_t, int64_t> shared_fill;
    for (const auto &[id, q] : sequences_) {
        if (q.swapped) continue;
        ++s.sequences;
        for (size_t i = 0; i < q.blocks.size(); ++i) {
            const int64_t fill = std::clamp<int64_t>(q.tokens - static_cast<int64_t>(i) * bs, 0, bs);
            const int32_t b = q.blocks[i];
            if (refcount_[static_cast<size_t>(b)] == 1) {
                s.slots_used += fill;
            } else {
                int64_t &f = shared_fill[b];
                f = std::max(f, fill);
            }
        }
    }
    for (const auto &[b, fill] : shared_fill) s.slots_used += fill;
    s.slots_wasted = s.blocks_used * bs - s.slots_used;
    s.bytes_per_block = geometry_.bytes_per_block_all_layers();
    s.swap_blocks_total = swap_allocator_.total();
    s.swap_blocks_used = swap_allocator_.used_count();
    s.prefix_queries = prefix_queries_;
    s.prefix_hits = prefix_hits_;
    return s;
}

}  // namespace pagoda::kv
