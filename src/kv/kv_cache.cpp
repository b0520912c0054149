#include "kv/kv_cache.hpp"

#include <string>

#include "common/error.hpp"

namespace pagoda::kv {

namespace {

int64_t blocks_for(int64_t tokens, int32_t block_size) {
    return (tokens + block_size - 1) / block_size;
}

}  // namespace

KvCache::KvCache(std::shared_ptr<const runtime::Device> device, const KvGeometry &geometry)
    : device_(std::move(device)), geometry_(geometry), allocator_(geometry.num_blocks) {
    buffers_.reserve(static_cast<size_t>(2 * geometry.n_layers));
    for (int64_t layer = 0; layer < geometry.n_layers; ++layer) {
        LayerPools p;
        for (const char *which : {"K", "V"}) {
            std::string what = std::string("the KV cache's layer ") + std::to_string(layer) + " " +
                               which + " pool";
            buffers_.emplace_back(*device_, geometry.pool_bytes(), what);
            (which[0] == 'K' ? p.k : p.v) = buffers_.back().get();
        }
        pools_.push_back(p);
    }
}

int64_t KvCache::blocks_needed(uint64_t seq, int64_t n_tokens) const {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    int64_t have = it == sequences_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
    int64_t need = blocks_for(n_tokens, geometry_.block_size) - have;
    return need > 0 ? need : 0;
}

int64_t KvCache::free_blocks() const {
    std::lock_guard lock(mutex_);
    return allocator_.free_count();
}

bool KvCache::reserve(uint64_t seq, int64_t n_tokens) {
    std::lock_guard lock(mutex_);
    Sequence &s = sequences_[seq];
    int64_t need = blocks_for(n_tokens, geometry_.block_size) - static_cast<int64_t>(s.blocks.size());
    if (need <= 0) return true;
    if (allocator_.allocate(need, s.blocks)) return true;
    if (s.blocks.empty()) sequences_.erase(seq);
    return false;
}

void KvCache::set_tokens(uint64_t seq, int64_t n_tokens) {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    int64_t capacity = it == sequences_.end()
                           ? 0
                           : static_cast<int64_t>(it->second.blocks.size()) * geometry_.block_size;
    if (it == sequences_.end() || n_tokens < 0 || n_tokens > capacity)
        throw Error(PAGODA_ERR_INTERNAL, "sequence " + std::to_string(seq) + " set to " +
                                             std::to_string(n_tokens) + " tokens but holds " +
                                             std::to_string(capacity) + " slots");
    slots_used_ += n_tokens - it->second.tokens;
    it->second.tokens = n_tokens;
}

void KvCache::release(uint64_t seq) {
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    if (it == sequences_.end()) return;
    allocator_.release(it->second.blocks);
    slots_used_ -= it->second.tokens;
    sequences_.erase(it);
}

const std::vector<int32_t> &KvCache::table(uint64_t seq) const {
    static const std::vector<int32_t> empty;
    std::lock_guard lock(mutex_);
    auto it = sequences_.find(seq);
    return it == sequences_.end() ? empty : it->second.blocks;
}

KvCacheStats KvCache::stats() const {
    std::lock_guard lock(mutex_);
    KvCacheStats s;
    s.block_size = geometry_.block_size;
    s.blocks_total = allocator_.total();
    s.blocks_used = allocator_.used_count();
    s.slots_used = slots_used_;
    s.sequences = static_cast<int64_t>(sequences_.size());
    s.bytes_per_block = geometry_.bytes_per_block_all_layers();
    return s;
}

}  // namespace pagoda::kv
