#include "exec/executor.hpp"

#include "common/error.hpp"
#include "exec/local_executor.hpp"
#include "exec/mesh_executor.hpp"
#include "exec/model_shard.hpp"

namespace pagoda::exec {

std::vector<kv::KvShardSpec> kv_shards_for(const model::ModelConfig &config,
                                           const std::vector<std::shared_ptr<const runtime::Device>> &devices,
                                           const mesh::Layout &layout, size_t first) {
    std::vector<kv::KvShardSpec> out;
    for (size_t i = 0; i < devices.size() && first + i < layout.device_count(); ++i) {
        const mesh::DevicePlacement &at = layout.place(first + i);
        const mesh::StagePlacement &stage = layout.stages()[size_t(at.stage)];
        const ModelShard shard{stage.first_layer, stage.end_layer, at.tp_rank, stage.tensor_parallel};
        out.push_back({devices[i], stage.first_layer, stage.end_layer, int32_t(shard.kv_head_begin(config)),
                       int32_t(shard.n_kv_heads(config)), at.kvp_rank, layout.kv_parallel()});
    }
    return out;
}

std::unique_ptr<Executor> make_executor(std::shared_ptr<const model::Model> model,
                                        std::shared_ptr<kv::KvCache> cache, const mesh::Layout &layout,
                                        const PipelineOptions &pipeline, std::shared_ptr<const mesh::World> world) {
    std::unique_ptr<Executor> executor;
    const model::Model &weights = *model;
    if (world != nullptr && world->size() > 1) {
        if (cache->shard_count() * size_t(world->size()) != layout.device_count())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "the KV cache holds " + std::to_string(cache->shard_count()) + " devices' shards on each of " +
                            std::to_string(world->size()) + " processes, the layout spans " +
                            std::to_string(layout.device_count()) + " devices");
        executor = std::make_unique<MeshExecutor>(std::move(model), std::move(cache), layout, pipeline, std::move(world));
    } else {
        if (cache->shard_count() != layout.device_count())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the KV cache spans " + std::to_string(cache->shard_count()) +
                                                         " devices, the layout " +
                                                         std::to_string(layout.device_count()));
        if (layout.device_count() == 1) executor = std::make_unique<LocalExecutor>(std::move(model), std::move(cache));
        else executor = std::make_unique<MeshExecutor>(std::move(model), std::move(cache), layout, pipeline);
    }
    // The process keeps resident only the weights its devices read in place (its shard).
    model::release_unused_pages(weights, executor->host_weight_ranges());
    return executor;
}

}  // namespace pagoda::exec
