// Where a model runs on a mesh, as a KV cache and an engine both need it: the layout of its
// stages and tensor-parallel shards over the mesh's devices, and how a pipeline feeds its stages.
// A plan given by the host is executed as is, after checking it fits the model and the mesh; a
// multi-device mesh without one gets the planner's; one device without one runs everything.
#pragma once

#include <memory>
#include <vector>

#include "exec/executor.hpp"
#include "kv/kv_shard.hpp"
#include "mesh/layout.hpp"
#include "mesh/mesh.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"

namespace pagoda {

struct MeshPlacement {
    std::shared_ptr<const mesh::Layout> layout;
    exec::PipelineOptions pipeline;
};

// Throws INVALID_ARGUMENT naming the mismatch (a plan for another model shape or mesh size),
// UNSUPPORTED for layouts not executed yet, and what the planner throws.
MeshPlacement place_on_mesh(const model::Model &model, const mesh::Mesh &mesh, const plan::Plan *plan);

// What each of this process's mesh devices holds of the KV cache under `layout` (every device
// of a mesh in one process).
std::vector<kv::KvShardSpec> kv_shards_for(const model::ModelConfig &config, const mesh::Mesh &mesh,
                                           const mesh::Layout &layout);

}  // namespace pagoda
