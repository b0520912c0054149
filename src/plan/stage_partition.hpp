// Alpa's inter-operator pass, for serving: cut a model's decoder layers into pipeline stages,
// give each stage a sub-mesh of an N×M device mesh (shapes (1, 2^p) or whole nodes (n, M), which
// always tile the mesh: Alpa App. 3.11), run each stage tensor-parallel over its sub-mesh, and
// keep every device within its memory. The objective is the latency of one batch (Σ t_i) or the
// time of B micro-batches (Alpa Eq. 3.2: Σ t_i + (B−1)·max t_i).
//
// The partitioner reads plain tables (StageCostTable), so callers can fill them from the cost
// model (make_stage_cost_table in cost_model.hpp) or from anything else, such as AlpaServe's
// α·L/n stage model in the simulator.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::plan {

// The physical mesh: `nodes` machines with `devices_per_node` devices each.
struct MeshShape {
    int32_t nodes = 1;
    int32_t devices_per_node = 1;
    int32_t device_count() const noexcept { return nodes * devices_per_node; }
};

// A stage's sub-mesh: `nodes` × `devices` (devices per node it uses). Either nodes == 1 and
// devices is a power of two ≤ M, or devices == M (whole nodes).
struct SubmeshShape {
    int32_t nodes = 1;
    int32_t devices = 1;
    int32_t device_count() const noexcept { return nodes * devices; }
    bool whole_nodes(const MeshShape &mesh) const noexcept { return devices == mesh.devices_per_node; }
    bool operator==(const SubmeshShape &) const = default;
};

// Alpa's shape set for `mesh`, smallest first: (1,1), (1,2), (1,4), …, (1,M), then (2,M), …,
// (N,M). Any multiset of them whose device counts sum to N·M tiles the mesh (Alpa App. 3.11),
// which needs M to be a power of two. Throws Error(INVALID_ARGUMENT) for a non-positive side
// and Error(UNSUPPORTED) for devices_per_node that is not a power of two.
std::vector<SubmeshShape> submesh_shapes(const MeshShape &mesh);

// Per-shape costs, one entry per element of `shapes` (index s below). A stage on shape s runs
// tensor-parallel over all shape.device_count() devices.
struct StageCostTable {
    std::vector<SubmeshShape> shapes;
    // [s][layer]: seconds of one forward of that decoder layer (all-reduces included), and the
    // bytes it needs on each device of the sub-mesh (its weight shard and KV reservation).
    std::vector<std::vector<double>> layer_seconds;
    std::vector<std::vector<double>> layer_bytes;
    // [s]: the embedding (charged to the stage holding layer 0) and the LM head (the stage
    // holding the last layer), in seconds and bytes per device.
    std::vector<double> embedding_seconds, embedding_bytes;
    std::vector<double> head_seconds, head_bytes;
    // [s]: transient activation bytes per device while a stage runs (once per stage).
    std::vector<double> activation_bytes;
    // [s]: seconds to send the activations a stage on shape s produces to the next stage, over
    // NVLink-class links or the network. The network is charged when the stage fills whole nodes
    // of a multi-node mesh (the next stage then sits on another node); otherwise the next stage
    // is assumed to share the node (Alpa places neighbouring small stages close).
    std::vector<double> send_seconds_intra_node, send_seconds_inter_node;
    double device_memory_bytes = 0;

    int64_t layer_count() const noexcept {
        return layer_seconds.empty() ? 0 : static_cast<int64_t>(layer_seconds.front().size());
    }
};

// Throws Error(INVALID_ARGUMENT) naming the field whose size or value is wrong (a table whose
// rows do not match `shapes`, a negative cost, no layers, a non-positive memory).
void validate(const StageCostTable &table);

enum class PartitionObjective {
    Latency,     // one batch through the pipeline: Σ t_i
    Throughput,  // B micro-batches: Σ t_i + (B−1)·max t_i (Alpa Eq. 3.2)
};

struct PartitionOptions {
    PartitionObjective objective = PartitionObjective::Latency;
    int32_t micro_batches = 1;    // B, for Throughput
    int32_t stages = 0;           // 0: any number; else exactly this many stages
    int32_t tensor_parallel = 0;  // 0: any shape; else only shapes of this many devices
    int32_t expert_parallel = 0;  // 0: the planner's choice; else every stage splits its experts so
                                  // many ways (plan.hpp: expert_parallel_for)
    // t_max candidates within epsilon of the last one tried are skipped (Alpa §3.5, TeraPipe
    // Eq. 6–8); the result is then within B·epsilon of the optimum. 0 = exact.
    double epsilon_seconds = 0.0;
};

struct Stage {
    int64_t first_layer = 0;  // decoder layers [first_layer, end_layer)
    int64_t end_layer = 0;
    SubmeshShape shape;
    int32_t tensor_parallel = 1;  // = shape.device_count()
    int32_t expert_parallel = 1;  // groups of its devices a mixture's experts split into
    bool has_embedding = false;
    bool has_head = false;
    double seconds = 0;           // compute + all-reduces + the send to the next stage
    double memory_bytes = 0;      // per device
};

struct StagePartition {
    std::vector<Stage> stages;        // in pipeline order; their devices tile the mesh
    double latency_seconds = 0;       // Σ t_i: one batch through every stage
    double max_stage_seconds = 0;     // the bottleneck: 1/throughput in batches per second
    double objective_seconds = 0;     // what was minimised (latency, or Σ t_i + (B−1)·max t_i)
};

// The optimum of the Alpa DP over stage boundaries and shapes, with every device of `mesh` used
// exactly once. Throws Error(INVALID_ARGUMENT) for bad options or a table whose shapes do not
// fit `mesh`, and Error(UNSUPPORTED) when no partition fits the devices' memory (the message
// says how much memory a device has and how much the smallest stage needs).
StagePartition partition_stages(const StageCostTable &table, const MeshShape &mesh,
                                const PartitionOptions &options);

// The objective of a given partition under `options` (used by tests and by callers that compare
// hand-made layouts with the optimum).
double partition_objective(const std::vector<Stage> &stages, const PartitionOptions &options);

}  // namespace pagoda::plan
