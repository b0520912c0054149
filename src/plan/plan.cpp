#include "plan/plan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

CostModel cost_model_for(const ModelShape &shape, const PlanRequest &r) {
    if (!r.cost_file.empty()) return measured_cost_model(r.cost_file, shape);
    DeviceSpec device = device_preset(r.device);
    if (r.weight_bytes > 0) device.weight_bytes = r.weight_bytes;
    return CostModel(shape, device);
}

}  // namespace

int32_t expert_parallel_for(const ModelShape &shape, int32_t width, int32_t requested, int64_t column_block) {
    if (requested < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "expert_parallel is " + std::to_string(requested) + ", want >= 0");
    if (shape.experts == 0) {
        if (requested > 1)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "expert_parallel=" + std::to_string(requested) +
                                                         ": the model is dense (it has no experts to split)");
        return 1;
    }
    auto fits = [&](int32_t ep) {
        return width % ep == 0 && shape.experts % ep == 0 && shape.expert_intermediate % (width / ep) == 0;
    };
    if (requested > 0) {
        if (!fits(requested))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "expert_parallel=" + std::to_string(requested) + " on a stage of " + std::to_string(width) +
                            " devices: it must divide the devices and the model's " + std::to_string(shape.experts) +
                            " experts, and leave each expert's " + std::to_string(shape.expert_intermediate) +
                            " columns splitting evenly over its group");
        return requested;
    }
    for (int32_t ep = 1; ep <= width; ep *= 2)
        if (fits(ep) && (shape.expert_intermediate / (width / ep)) % std::max<int64_t>(column_block, 1) == 0) return ep;
    for (int32_t ep = 1; ep <= width; ep *= 2)
        if (fits(ep)) return ep;
    throw Error(PAGODA_ERR_INVALID_ARGUMENT, "no expert split fits a stage of " + std::to_string(width) +
                                                 " devices: the model's " + std::to_string(shape.experts) +
                                                 " experts of " + std::to_string(shape.expert_intermediate) +
                                                 " columns divide neither way");
}

MeshShape parse_mesh_shape(const std::string &text) {
    const size_t x = text.find('x');
    auto number = [&](const std::string &part) -> int32_t {
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "mesh shape \"" + text + "\": want NODESxDEVICES, such as \"8x8\"");
        return int32_t(std::strtol(part.c_str(), nullptr, 10));
    };
    if (x == std::string::npos)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "mesh shape \"" + text + "\": want NODESxDEVICES, such as \"8x8\"");
    MeshShape m{number(text.substr(0, x)), number(text.substr(x + 1))};
    if (m.nodes <= 0 || m.devices_per_node <= 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "mesh shape \"" + text + "\": both sides must be positive");
    return m;
}

double stage_slice_seconds(const CostModel &model, const Plan &plan, const Stage &stage, int64_t tokens,
                           int64_t context) {
    const int32_t tp = stage.tensor_parallel;
    const bool across = stage.shape.nodes > 1;
    double t = double(stage.end_layer - stage.first_layer) * model.layer_seconds(tokens, context, tp, across);
    if (stage.has_embedding) t += model.embedding_seconds(tokens, tp, across);
    if (stage.has_head) {
        t += model.head_seconds(1, tp, across);  // only the last token's logits are needed
    } else {
        const bool network = stage.shape.whole_nodes(plan.mesh) && plan.mesh.nodes > 1;
        t += model.send_seconds(tokens, network);
    }
    return t;
}

Plan make_plan(const ModelShape &shape, const PlanRequest &r) {
    validate(shape);
    if (r.prompt_tokens < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "prompt_tokens is " + std::to_string(r.prompt_tokens) + ", want >= 0");
    const CostModel model = cost_model_for(shape, r);
    Plan p;
    p.shape = shape;
    p.device = model.device().name;
    p.cost_source = model.measured() ? "measured:" + r.cost_file : "analytic";
    p.link_source = model.link_source();
    p.mesh = r.mesh;
    p.partition_options = r.partition;
    p.workload = r.workload;
    p.partition = partition_stages(make_stage_cost_table(model, r.mesh, r.workload), r.mesh, r.partition);
    // Splitting experts whole or by columns moves the same bytes (the stage's all-reduce) and
    // holds the same memory per device, so the split is chosen after the partition.
    for (Stage &s : p.partition.stages)
        s.expert_parallel =
            expert_parallel_for(shape, s.tensor_parallel, r.partition.expert_parallel, r.expert_column_block);

    if (r.prompt_tokens > 0) {
        SlicingOptions o;
        o.stages = int32_t(p.partition.stages.size());
        o.prompt_tokens = r.prompt_tokens;
        o.granularity = r.granularity;
        o.epsilon_seconds = r.partition.epsilon_seconds;
        const SliceCostFn cost = [&](int64_t tokens, int64_t context) {
            double worst = 0;
            for (const Stage &s : p.partition.stages)
                worst = std::max(worst, stage_slice_seconds(model, p, s, tokens, context));
            return worst;
        };
        PlanSlicing s;
        s.prompt_tokens = r.prompt_tokens;
        s.granularity = r.granularity;
        s.stages = o.stages;
        s.optimal = plan_token_slices(cost, o);
        s.best_uniform = best_uniform_slicing(cost, o);
        p.slicing = s;
    }
    return p;
}

}  // namespace pagoda::plan
