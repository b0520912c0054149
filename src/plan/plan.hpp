// A plan: how a model is laid out on a mesh (Alpa stages with their sub-meshes and tensor-
// parallel degrees) and how a long prompt's prefill is sliced across those stages (TeraPipe),
// with the predicted times and memory. It is data with a stable meaning: the engine will execute
// it, and it round-trips through JSON (plan_json.hpp) unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/cost_model.hpp"
#include "plan/model_shape.hpp"
#include "plan/stage_partition.hpp"
#include "plan/terapipe_slicing.hpp"

namespace pagoda::plan {

// What to plan, beyond the model's shape.
struct PlanRequest {
    MeshShape mesh;
    std::string device = "cpu";      // a device preset; ignored when cost_file is set
    std::string cost_file;           // measured layer costs (measured_costs.hpp); "" = analytic
    double weight_bytes = 0;         // bytes per weight as served; 0 = the preset's
    int64_t expert_column_block = 1; // the experts' block (model.hpp: expert_column_block)
    PartitionOptions partition;
    ServingWorkload workload;        // sizes stage costs and memory
    int64_t prompt_tokens = 0;       // > 0: also slice a prompt of this length (TeraPipe)
    int64_t granularity = 8;
};

struct PlanSlicing {
    int64_t prompt_tokens = 0;
    int64_t granularity = 0;
    int32_t stages = 0;
    Slicing optimal;
    Slicing best_uniform;
};

struct Plan {
    ModelShape shape;
    std::string device;        // the device spec's name
    std::string cost_source;   // "analytic" or "measured:<cost file>"
    std::string link_source;   // CostModel::link_source(): "assumed", or which links were measured
    MeshShape mesh;
    PartitionOptions partition_options;
    ServingWorkload workload;
    StagePartition partition;
    std::optional<PlanSlicing> slicing;
};

// Plans `shape` as `request` asks. Throws Error: INVALID_ARGUMENT naming the option at fault,
// NOT_FOUND for an unknown device preset or a cost file without this shape, IO/FORMAT for an
// unreadable cost file, UNSUPPORTED when nothing fits the devices' memory.
Plan make_plan(const ModelShape &shape, const PlanRequest &request);

// One stage's time for `tokens` new tokens after `context` cached ones: its layers, plus the
// embedding or LM head it holds, plus the send to the next stage. The slicer plans with the
// slowest stage (TeraPipe's stages are identical; ours need not be).
double stage_slice_seconds(const CostModel &model, const Plan &plan, const Stage &stage, int64_t tokens,
                           int64_t context);

// The expert split a stage `width` devices wide gets: `requested` when nonzero (it must divide
// the width and the experts, and leave each expert's columns splitting over its group), else the
// smallest power of two that does with each device's columns a multiple of `column_block` (so
// that quantized blocks stay whole; a split block is widened to f32 on the device), or failing
// that the smallest that divides at all. Smallest, since splitting every expert's columns over
// all the devices (ep = 1) reads the fewest bytes on the busiest device. 1 for a dense model.
// Throws INVALID_ARGUMENT naming what does not divide.
int32_t expert_parallel_for(const ModelShape &shape, int32_t width, int32_t requested, int64_t column_block = 1);

// "8x8" → {8, 8}. Throws Error(INVALID_ARGUMENT) naming the text for anything else.
MeshShape parse_mesh_shape(const std::string &text);

}  // namespace pagoda::plan
