#include "plan/placement_partitioner.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "common/error.hpp"

namespace pagoda::plan {

ReplicaCostFn replica_costs_from_partitioner(StageCostTableFn tables,
                                             const PartitionerCostOptions &options) {
    if (options.devices_per_node < 1 || options.micro_batches < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "partitioner costs: devices_per_node = " +
                        std::to_string(options.devices_per_node) + " and micro_batches = " +
                        std::to_string(options.micro_batches) + " must be ≥ 1");
    using Key = std::tuple<uint32_t, int32_t, int32_t>;
    auto memo = std::make_shared<std::map<Key, std::optional<ReplicaCost>>>();
    return [tables = std::move(tables), options, memo](
               uint32_t model, int32_t pipeline, int32_t tensor) -> std::optional<ReplicaCost> {
        const Key key{model, pipeline, tensor};
        if (const auto found = memo->find(key); found != memo->end()) return found->second;
        std::optional<ReplicaCost> answer;
        const int32_t devices = pipeline * tensor;
        const int32_t per_node = options.devices_per_node;
        MeshShape mesh;
        bool shaped = true;
        if (devices <= per_node) {
            shaped = (devices & (devices - 1)) == 0;  // Alpa's in-node shapes are powers of two
            mesh = {1, devices};
        } else if (devices % per_node == 0)
            mesh = {devices / per_node, per_node};
        else
            shaped = false;
        if (shaped && pipeline >= 1 && tensor >= 1) {
            PartitionOptions partition;
            partition.objective = PartitionObjective::Throughput;
            partition.micro_batches = options.micro_batches;
            partition.stages = pipeline;
            partition.tensor_parallel = tensor;
            const StageCostTable table = tables(model, mesh);
            validate(table);  // a broken table is the caller's bug: let it be heard
            bool has_degree = false;
            for (const SubmeshShape &shape : table.shapes)
                has_degree = has_degree || shape.device_count() == tensor;
            if (has_degree && pipeline <= table.layer_count()) {
                try {
                    const StagePartition result = partition_stages(table, mesh, partition);
                    ReplicaCost cost;
                    for (const Stage &stage : result.stages) {
                        cost.stage_seconds.push_back(stage.seconds);
                        cost.stage_bytes.push_back(stage.memory_bytes);
                    }
                    answer = std::move(cost);
                } catch (const Error &error) {
                    // No layout fits the devices' memory (or the mesh has no Alpa shapes): the
                    // search skips the configuration.
                    if (error.status() != PAGODA_ERR_UNSUPPORTED) throw;
                }
            }
        }
        memo->emplace(key, answer);
        return answer;
    };
}

}  // namespace pagoda::plan
