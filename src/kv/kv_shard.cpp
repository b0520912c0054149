#include "kv/kv_shard.hpp"

#include <string>

namespace pagoda::kv {

KvShard::KvShard(KvShardSpec spec, const KvGeometry &cache, int64_t swap_blocks)
    : spec_(std::move(spec)),
      geometry_([&] {
          KvGeometry g = cache;
          g.n_kv_heads = spec_.n_kv_heads;
          g.block_size = cache.block_size / spec_.kv_shards;
          return g;
      }()),
      pools_(size_t(cache.n_layers)),
      stream_(*spec_.device),
      swap_(*spec_.device, geometry_, spec_.end_layer - spec_.first_layer, swap_blocks) {
    const int32_t held = spec_.end_layer - spec_.first_layer;
    buffers_.reserve(size_t(2 * held));
    for (int32_t layer = spec_.first_layer; layer < spec_.end_layer; ++layer) {
        LayerPools &p = pools_[size_t(layer)];
        for (const char *which : {"K", "V"}) {
            buffers_.emplace_back(*spec_.device, geometry_.pool_bytes(),
                                  std::string("the KV cache's layer ") + std::to_string(layer) + " " + which + " pool");
            (which[0] == 'K' ? p.k : p.v) = buffers_.back().get();
            device_pools_.push_back(buffers_.back().get());
        }
    }
}

uint64_t KvShard::bytes() const noexcept {
    uint64_t total = 0;
    for (const runtime::DeviceBuffer &b : buffers_) total += b.bytes();
    return total;
}

void KvShard::copy_blocks(pagoda_op_t op, pagoda_swap_direction_t direction, const std::vector<int32_t> &pairs,
                          int64_t swap_blocks) {
    if (pairs.empty() || device_pools_.empty()) return;
    pagoda_op_copy_blocks_t a{};
    a.struct_size = sizeof(a);
    a.direction = direction;
    a.n_caches = static_cast<int64_t>(device_pools_.size());
    const bool out = op == PAGODA_OP_SWAP_BLOCKS && direction == PAGODA_SWAP_OUT;
    const bool in = op == PAGODA_OP_SWAP_BLOCKS && direction == PAGODA_SWAP_IN;
    a.src_caches = in ? swap_.pools().data() : device_pools_.data();
    a.dst_caches = out ? swap_.pools().data() : device_pools_.data();
    a.src_num_blocks = in ? swap_blocks : geometry_.num_blocks;
    a.dst_num_blocks = out ? swap_blocks : geometry_.num_blocks;
    a.block_bytes = static_cast<int64_t>(geometry_.block_bytes());
    a.n_pairs = static_cast<int64_t>(pairs.size() / 2);
    a.block_pairs = pairs.data();
    stream_.launch(op, &a);
    // The executor's streams read these blocks next; finishing here orders the streams.
    stream_.synchronize();
}

}  // namespace pagoda::kv
