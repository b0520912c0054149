// One device's part of a paged KV cache: the K and V pools of the layers that device runs,
// holding its KV heads, for every block id of the cache, plus host swap space for the same.
// Every device of a mesh holds every block id, so one block table serves all of them: a block
// is a slice of each device's pools (its layers under pipeline parallelism, its heads under
// tensor parallelism).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_geometry.hpp"
#include "kv/swap_space.hpp"
#include "pagoda/ops.h"
#include "runtime/device.hpp"

namespace pagoda::kv {

// What one device holds.
struct KvShardSpec {
    std::shared_ptr<const runtime::Device> device;
    int32_t first_layer = 0;  // layers [first_layer, end_layer) of the model
    int32_t end_layer = 0;
    int32_t kv_head_begin = 0;  // KV heads [kv_head_begin, kv_head_begin + n_kv_heads)
    int32_t n_kv_heads = 0;
    // Cache parallelism: each block of the cache is split into `kv_shards` runs of tokens, and
    // this device holds run `kv_shard` (a sequence's blocks dealt block-cyclically, as
    // PAGODA_OP_PAGED_ATTENTION's kv_shards reads them).
    int32_t kv_shard = 0;
    int32_t kv_shards = 1;
};

class KvShard {
public:
    // `cache` gives the dtype, block size, block count and the model's layer count; the shard's
    // pools hold spec.n_kv_heads heads. Throws OUT_OF_MEMORY naming the pool.
    KvShard(KvShardSpec spec, const KvGeometry &cache, int64_t swap_blocks);

    const KvShardSpec &spec() const noexcept { return spec_; }
    const runtime::Device &device() const noexcept { return *spec_.device; }
    // The cache's geometry with this shard's head count and block size (the cache's block size
    // over kv_shards): what its kernels see.
    const KvGeometry &geometry() const noexcept { return geometry_; }
    // One entry per model layer; NULL pools for the layers the device does not run.
    const std::vector<LayerPools> &pools() const noexcept { return pools_; }
    // Device bytes of the shard's pools.
    uint64_t bytes() const noexcept;
    // Copies blocks within the shard's pools (COPY_BLOCKS) or to and from its swap space
    // (SWAP_BLOCKS), on the shard's own stream, and waits.
    void copy_blocks(pagoda_op_t op, pagoda_swap_direction_t direction, const std::vector<int32_t> &pairs,
                     int64_t swap_blocks);

private:
    KvShardSpec spec_;
    KvGeometry geometry_;
    std::vector<runtime::DeviceBuffer> buffers_;
    std::vector<LayerPools> pools_;
    std::vector<void *> device_pools_;  // K, V of each held layer, for COPY/SWAP_BLOCKS
    runtime::Stream stream_;
    SwapSpace swap_;
};

}  // namespace pagoda::kv
