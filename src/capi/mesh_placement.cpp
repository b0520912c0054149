#include "capi/mesh_placement.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/log.hpp"
#include "plan/model_shape.hpp"

namespace pagoda {

namespace {

// The first field where two shapes differ, as "hidden 64 vs 4096".
std::string shape_difference(const plan::ModelShape &a, const plan::ModelShape &b) {
    auto field = [](const char *name, int64_t x, int64_t y) {
        return x == y ? std::string() : std::string(name) + " " + std::to_string(x) + " vs " + std::to_string(y);
    };
    for (const std::string &d : {field("hidden", a.hidden, b.hidden), field("intermediate", a.intermediate, b.intermediate),
                                 field("layers", a.layers, b.layers), field("heads", a.heads, b.heads),
                                 field("kv_heads", a.kv_heads, b.kv_heads), field("head_dim", a.head_dim, b.head_dim),
                                 field("vocab", a.vocab, b.vocab),
                                 field("tied_embeddings", a.tied_embeddings, b.tied_embeddings)})
        if (!d.empty()) return d;
    return "none";
}

bool power_of_two(int32_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The machines of a mesh over processes as the planner's nodes: {machines, devices on each} when
// its processes sit on several machines, each holding as many, in rank order (mpirun's
// default mapping fills a host before the next); {0, 0} otherwise.
plan::MeshShape machines_as_nodes(const mesh::Mesh &mesh) {
    if (!mesh.spans_processes()) return {0, 0};
    const mesh::World &w = *mesh.world();
    const int32_t machines = w.machine_count();
    if (machines < 2 || w.size() % machines != 0) return {0, 0};
    const int32_t per_machine = w.size() / machines;
    for (int32_t r = 0; r < w.size(); ++r)
        if (w.machine_of(r) != r / per_machine) return {0, 0};
    return {machines, int32_t(mesh.device_count()) / machines};
}

// The planner's layout for `mesh` when the host gave no plan: the mesh's pp, tp and ep axes, when
// named, fix the stage count, width and expert split (otherwise the planner chooses); costs come from the
// device kind's preset.
plan::Plan default_plan(const model::Model &model, const plan::ModelShape &shape, const mesh::Mesh &mesh) {
    // Each kvp copy of the layout spans this many devices.
    const int32_t n = int32_t(mesh.device_count()) / std::max(mesh.axis("kvp"), 1);
    plan::PlanRequest r;
    const bool named = !mesh.axes().empty();
    // Named axes fix each stage's width, tp · ep devices, and how its experts split.
    const int32_t tp = mesh.axis("tp"), ep = mesh.axis("ep");
    r.partition.tensor_parallel = tp > 0 || ep > 0 ? std::max(tp, 1) * std::max(ep, 1) : 0;
    r.partition.expert_parallel = named ? std::max(ep, 1) : 0;
    r.partition.stages = mesh.axis("pp");
    // Alpa's sub-mesh shapes need a power-of-two node width; other counts plan as nodes of one
    // device, which is exact when no stage is tensor-parallel. Over several machines the nodes
    // are the machines: a stage is part of one machine or whole machines, so tensor parallelism
    // stays within a machine unless the axes ask otherwise, and stages split across machines.
    r.mesh = power_of_two(n) ? plan::MeshShape{1, n} : plan::MeshShape{n, 1};
    if (const plan::MeshShape machines = machines_as_nodes(mesh);
        machines.nodes > 1 && power_of_two(machines.devices_per_node) && mesh.axis("kvp") <= 1)
        r.mesh = machines;
    if (!power_of_two(n) && r.partition.tensor_parallel > 1)
        throw Error(PAGODA_ERR_UNSUPPORTED, "planning " + std::to_string(r.partition.tensor_parallel) +
                                                "-wide stages over " + std::to_string(n) +
                                                " devices: without a plan, the device count must be a power of two");
    r.device = mesh.devices().front()->info().kind == PAGODA_DEVICE_GPU ? "h100" : "cpu";
    r.expert_column_block = model::expert_column_block(model);
    // Stages run micro-batches at the same time, so balanced stages serve fastest: Alpa's
    // throughput objective with one micro-batch per stage.
    r.partition.objective = plan::PartitionObjective::Throughput;
    r.partition.micro_batches = r.partition.stages > 0 ? r.partition.stages : n;
    return plan::make_plan(shape, r);
}

// What the layout takes of a plan (the mesh room knows nothing of the planner's types).
mesh::LayoutSpec layout_spec(const plan::Plan &plan) {
    mesh::LayoutSpec spec;
    spec.devices = plan.mesh.device_count();
    for (const plan::Stage &s : plan.partition.stages)
        spec.stages.push_back({s.first_layer, s.end_layer, s.tensor_parallel, s.expert_parallel});
    spec.shape = {plan.shape.heads, plan.shape.kv_heads, plan.shape.intermediate, plan.shape.experts,
                  plan.shape.expert_intermediate};
    return spec;
}

}  // namespace

MeshPlacement place_on_mesh(const model::Model &model, const mesh::Mesh &mesh, const plan::Plan *plan) {
    const model::ModelConfig &c = model.config();
    const plan::ModelShape shape = plan::model_shape(c);
    MeshPlacement p;
    if (plan == nullptr && mesh.device_count() == 1) {
        p.layout = std::make_shared<const mesh::Layout>(mesh::Layout::single_device(int32_t(c.n_layers)));
        return p;
    }
    if (plan != nullptr && !(plan->shape == shape))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the plan was made for another model shape (" +
                                                     shape_difference(plan->shape, shape) +
                                                     ", the plan's first): make it for this model");
    const plan::Plan planned = plan != nullptr ? *plan : default_plan(model, shape, mesh);
    p.layout = std::make_shared<const mesh::Layout>(mesh, layout_spec(planned));
    if (mesh.spans_processes() && mesh.world()->rank() == 0) {
        std::string stages;
        for (const plan::Stage &s : planned.partition.stages)
            stages += (stages.empty() ? "" : " | ") + std::string("layers ") + std::to_string(s.first_layer) + "-" +
                      std::to_string(s.end_layer - 1) + " tp=" + std::to_string(s.tensor_parallel);
        log(PAGODA_LOG_INFO, std::string(plan != nullptr ? "the host's plan" : "planned") + " over " +
                                 std::to_string(planned.mesh.nodes) + "x" + std::to_string(planned.mesh.devices_per_node) +
                                 " devices (nodes x per node): " + stages);
    }
    if (planned.slicing) {
        p.pipeline.prefill_slices = planned.slicing->optimal.lengths;
        p.pipeline.granularity = planned.slicing->granularity;
    }
    return p;
}

std::vector<kv::KvShardSpec> kv_shards_for(const model::ModelConfig &config, const mesh::Mesh &mesh,
                                           const mesh::Layout &layout) {
    // Over several processes, this process's devices only: mesh devices [first, first + n).
    const size_t first = mesh.spans_processes() ? size_t(mesh.world()->rank()) * mesh.devices().size() : 0;
    return exec::kv_shards_for(config, mesh.devices(), layout, first);
}

}  // namespace pagoda
