// Replica costs for the placement search from the Alpa-style stage partitioner
// (stage_partition.hpp): a model on a group of `pipeline` stages × `tensor` devices costs what the
// partitioner's best layout with exactly that many stages, each on `tensor` devices, costs
// (AlpaServe §4.1: the inter-op DP for serving, with data parallelism left to the placement).
#pragma once

#include <cstdint>
#include <functional>

#include "plan/placement_search.hpp"
#include "plan/stage_partition.hpp"

namespace pagoda::plan {

// The cost table of `model` for a group's mesh (one node of up to devices_per_node devices, or
// whole nodes); e.g. make_stage_cost_table (cost_model.hpp) for that model's CostModel.
using StageCostTableFn = std::function<StageCostTable(uint32_t model, const MeshShape &mesh)>;

struct PartitionerCostOptions {
    int32_t devices_per_node = 1;
    // The partitioner's throughput objective, Σ t_i + (B−1)·max t_i: a large B approaches
    // AlpaServe's min-max stage latency while still preferring a short pipeline among equals.
    int32_t micro_batches = 16;
};

// A ReplicaCostFn answering from partition_stages(); a configuration the partitioner cannot fit
// into memory, or a group that is neither inside one node nor whole nodes, gives nullopt. Answers
// are memoised per (model, pipeline, tensor): the returned function is not thread-safe.
ReplicaCostFn replica_costs_from_partitioner(StageCostTableFn tables,
                                             const PartitionerCostOptions &options);

}  // namespace pagoda::plan
