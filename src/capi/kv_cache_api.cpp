// kv_cache.h: sizing and allocating the paged KV cache, and its statistics.
#include <algorithm>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/mesh_placement.hpp"
#include "capi/plan_handle.hpp"
#include "capi/sized_struct.hpp"
#include "pagoda/kv_cache.h"

using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_kv_cache_options_t default_kv_options() {
    pagoda_kv_cache_options_t o{};
    o.struct_size = sizeof(o);
    o.prefix_caching = 1;
    return o;
}

// Bytes one block costs on the device holding `shard` (K and V of its layers and heads).
uint64_t shard_block_bytes(const pagoda::kv::KvGeometry &g, const pagoda::kv::KvShardSpec &shard) {
    pagoda::kv::KvGeometry local = g;
    local.n_kv_heads = shard.n_kv_heads;
    local.block_size = g.block_size / shard.kv_shards;
    return 2 * uint64_t(shard.end_layer - shard.first_layer) * local.block_bytes();
}

// The pool's geometry from the options: block size, dtype, and a block count from the budget,
// which every device must hold (each holds every block id, for its layers and heads).
pagoda::kv::KvGeometry geometry_for(const pagoda::model::ModelConfig &c,
                                    const std::vector<pagoda::kv::KvShardSpec> &shards,
                                    const pagoda_kv_cache_options_t &o) {
    pagoda::kv::KvGeometry g;
    g.n_layers = c.n_layers;
    g.n_kv_heads = c.n_kv_heads;
    g.head_dim = c.head_dim;
    g.block_size = o.block_size == 0 ? 16 : o.block_size;
    if (g.block_size < 1 || g.block_size > 128)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "block_size must be 1-128 (got " + std::to_string(o.block_size) + ")");
    // Under cache parallelism a block is one run of block_size tokens on each of its devices.
    g.block_size *= shards.front().kv_shards;
    switch (o.dtype) {
        case PAGODA_DTYPE_INVALID:
            g.dtype = shards.front().device->info().kind == PAGODA_DEVICE_GPU ? PAGODA_DTYPE_F16 : PAGODA_DTYPE_F32;
            break;
        case PAGODA_DTYPE_F32:
        case PAGODA_DTYPE_F16:
        case PAGODA_DTYPE_BF16: g.dtype = static_cast<pagoda_dtype_t>(o.dtype); break;
        default:
            fail(PAGODA_ERR_INVALID_ARGUMENT, "dtype must be F32, F16 or BF16 (got " +
                                                  std::to_string(o.dtype) + ")");
    }
    if (o.num_blocks < 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "num_blocks is negative");
    if (o.num_blocks > 0) {
        g.num_blocks = o.num_blocks;
    } else {
        // A budget per device: the one given, or a quarter of what is free, but no more than 64
        // sequences of full context need. The device that fits the fewest blocks decides.
        const uint64_t full_context = static_cast<uint64_t>((c.max_position + g.block_size - 1) / g.block_size) * 64;
        int64_t blocks = INT64_MAX;
        for (const pagoda::kv::KvShardSpec &shard : shards) {
            const uint64_t per_block = shard_block_bytes(g, shard);
            uint64_t budget = o.memory_bytes;
            if (budget == 0) budget = std::min<uint64_t>(shard.device->info().free_memory / 4, full_context * per_block);
            const int64_t fits = static_cast<int64_t>(budget / per_block);
            if (fits < 1)
                fail(PAGODA_ERR_INVALID_ARGUMENT, "a memory budget of " + std::to_string(budget) + " bytes on " +
                                                      shard.device->name() + " holds no block (one takes " +
                                                      std::to_string(per_block) + " bytes there)");
            blocks = std::min(blocks, fits);
        }
        g.num_blocks = blocks;
    }
    if (g.num_blocks > INT32_MAX) fail(PAGODA_ERR_INVALID_ARGUMENT, "num_blocks is past 2^31 - 1");
    return g;
}

// Host blocks for preemption by swap: `swap_bytes`, or by default as much as the device pool
// holds but no more than 4 GiB.
int64_t swap_blocks_for(const pagoda::kv::KvGeometry &g, uint64_t swap_bytes) {
    const uint64_t per_block = g.bytes_per_block_all_layers();
    uint64_t bytes = swap_bytes;
    if (bytes == 0) bytes = std::min<uint64_t>(per_block * static_cast<uint64_t>(g.num_blocks), uint64_t{4} << 30);
    return static_cast<int64_t>(std::min<uint64_t>(bytes / per_block, INT32_MAX));
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_kv_cache_options_init(pagoda_kv_cache_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_kv_options());
}

namespace {

// Every process of a mesh keeps the same block accounting, so all take the smallest block and
// swap counts any of them can hold.
void agree_on_blocks(const pagoda::mesh::World &world, pagoda::kv::KvGeometry &g, pagoda::kv::KvCacheOptions &ko) {
    const int64_t mine[2] = {g.num_blocks, ko.swap_blocks};
    std::vector<int64_t> all(2 * size_t(world.size()));
    world.bootstrap()->all_gather(mine, all.data(), sizeof mine);
    for (int32_t r = 0; r < world.size(); ++r) {
        g.num_blocks = std::min(g.num_blocks, all[2 * size_t(r)]);
        ko.swap_blocks = std::min(ko.swap_blocks, all[2 * size_t(r) + 1]);
    }
}

}  // namespace

PAGODA_API pagoda_status_t pagoda_kv_cache_create(const pagoda_model_t *model,
                                                  const pagoda_mesh_t *mesh,
                                                  const pagoda_plan_t *plan,
                                                  const pagoda_kv_cache_options_t *options,
                                                  pagoda_kv_cache_t **out) {
    return guarded("pagoda_kv_cache_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        const pagoda_model *m = pagoda::require_handle(model, "model");
        const pagoda_mesh *me = pagoda::require_handle(mesh, "mesh");
        const pagoda::plan::Plan *p =
            plan != nullptr ? &pagoda::require_handle(const_cast<pagoda_plan_t *>(plan), "plan")->impl : nullptr;
        pagoda_kv_cache_options_t o = pagoda::read_sized(options, default_kv_options(), "options");
        pagoda::MeshPlacement placement = pagoda::place_on_mesh(*m->impl, *me->impl, p);
        const std::vector<pagoda::kv::KvShardSpec> shards =
            pagoda::kv_shards_for(m->impl->config(), *me->impl, *placement.layout);
        pagoda::kv::KvGeometry g = geometry_for(m->impl->config(), shards, o);
        auto cache = std::make_unique<pagoda_kv_cache>();
        if (o.prefix_caching != 0 && o.prefix_caching != 1)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "prefix_caching must be 0 or 1 (got " + std::to_string(o.prefix_caching) + ")");
        pagoda::kv::KvCacheOptions ko;
        ko.prefix_caching = o.prefix_caching == 1;
        ko.swap_blocks = swap_blocks_for(g, o.swap_bytes);
        if (me->impl->spans_processes()) agree_on_blocks(*me->impl->world(), g, ko);
        cache->impl = std::make_shared<pagoda::kv::KvCache>(shards, g, ko);
        cache->placement = std::move(placement);
        cache->mesh = me->impl;
        cache->model = m->impl;
        *out = cache.release();
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_kv_cache_destroy(pagoda_kv_cache_t *cache) {
    if (cache != nullptr && cache->magic == pagoda_kv_cache::kMagic) delete cache;
}

PAGODA_API pagoda_status_t pagoda_kv_cache_get_stats(const pagoda_kv_cache_t *cache,
                                                 pagoda_kv_cache_stats_t *stats) {
    return guarded("pagoda_kv_cache_get_stats", [&] {
        pagoda::kv::KvCacheStats s = pagoda::require_handle(cache, "cache")->impl->stats();
        pagoda_kv_cache_stats_t full{};
        full.struct_size = sizeof(full);
        full.block_size = s.block_size;
        full.blocks_total = s.blocks_total;
        full.blocks_used = s.blocks_used;
        full.blocks_free = s.blocks_total - s.blocks_used - s.blocks_cached;
        full.blocks_cached = s.blocks_cached;
        full.slots_wasted = s.slots_wasted;
        full.swap_blocks_total = s.swap_blocks_total;
        full.swap_blocks_used = s.swap_blocks_used;
        full.prefix_queries = s.prefix_queries;
        full.prefix_hits = s.prefix_hits;
        full.slots_used = s.slots_used;
        full.sequences = s.sequences;
        full.bytes_per_block = s.bytes_per_block;
        pagoda::write_sized(stats, full, "stats");
        return PAGODA_OK;
    });
}

}  // extern "C"
