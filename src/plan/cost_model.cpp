#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

void check_tp(int32_t tp) {
    if (tp < 1) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "tensor-parallel degree " + std::to_string(tp) + ", want >= 1");
}

}  // namespace

CostModel::CostModel(const ModelShape &shape, const DeviceSpec &device) : shape_(shape), device_(device) {
    validate(shape_);
    validate(device_);
    within_node_ = {device_.intra_node_latency, device_.intra_node_bandwidth, device_.intra_node_latency,
                    device_.intra_node_bandwidth, ""};
    across_nodes_ = {device_.inter_node_latency, device_.inter_node_bandwidth, device_.inter_node_latency,
                     device_.inter_node_bandwidth, ""};
}

CostModel::CostModel(const MeasuredLayerCosts &costs) : CostModel(costs.shape, costs.device_spec) {
    validate(costs);
    measured_ = costs;
    if (costs.tensor_parallel != 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs of a " + std::to_string(costs.tensor_parallel) +
                                                     "-device group given as one device's");
}

CostModel::CostModel(const std::vector<MeasuredLayerCosts> &costs)
    : CostModel(costs.empty() ? throw Error(PAGODA_ERR_INVALID_ARGUMENT, "no measured costs") : costs.front()) {
    for (size_t i = 1; i < costs.size(); ++i) {
        const MeasuredLayerCosts &group = costs[i];
        validate(group);
        if (!(group.shape == shape_))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs of a group for another model shape (" +
                                                         group.shape.key() + ", not " + shape_.key() + ")");
        if (group.tensor_parallel < 2 || !measured_groups_.emplace(group.tensor_parallel, group).second)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs: a group's tensor_parallel " +
                                                         std::to_string(group.tensor_parallel) +
                                                         " is given twice or is below 2");
    }
}

int CostModel::use_measured_links(const std::vector<MeasuredLink> &links) {
    const NodeLinks found = node_links(links, measured_ ? measured_->backend : device_.name);
    int levels = 0;
    for (auto [link, costs] : {std::pair{found.within_node, &within_node_}, std::pair{found.across_nodes, &across_nodes_}}) {
        if (link == nullptr) continue;
        validate(*link);
        *costs = {link->all_reduce.latency, link->all_reduce.bandwidth, link->send.latency, link->send.bandwidth,
                  link_path_name(link->path)};
        ++levels;
    }
    return levels;
}

std::string CostModel::link_source() const {
    auto level = [](const LinkCosts &l, const char *where) {
        return (l.measured_path.empty() ? std::string("assumed ") : "measured " + l.measured_path + " ") + where;
    };
    if (within_node_.measured_path.empty() && across_nodes_.measured_path.empty()) return "assumed";
    return level(within_node_, "within nodes") + "; " + level(across_nodes_, "across nodes");
}

std::vector<int32_t> CostModel::measured_tensor_parallel() const {
    std::vector<int32_t> out;
    if (measured_) out.push_back(1);
    for (const auto &[tp, costs] : measured_groups_) out.push_back(tp);
    return out;
}

const MeasuredLayerCosts *CostModel::group_times(int32_t tp, bool across_nodes) const {
    // A group timed inside one machine says nothing of one whose all-reduces cross the network.
    if (tp < 2 || across_nodes) return nullptr;
    const auto found = measured_groups_.find(tp);
    return found == measured_groups_.end() ? nullptr : &found->second;
}

double CostModel::layer_flops(int64_t tokens, int64_t context) const {
    const double l = double(tokens), c = double(context);
    // 2 FLOPs per multiply-add over every weight the token goes through (its experts' only).
    const double matmul = 2.0 * l * (shape_.layer_parameters_active() - 2.0 * double(shape_.hidden));
    // QKᵀ and AV: each query sees the cached prefix and, causally, the slice up to itself.
    const double attention = 4.0 * l * (c + (l + 1.0) / 2.0) * double(shape_.heads * shape_.head_dim);
    return matmul + attention;
}

double CostModel::layer_traffic_bytes(int64_t tokens, int64_t context) const {
    const double l = double(tokens), c = double(context);
    const double kv_read = (c + l) * kv_bytes_per_token_per_layer();
    const double acts = l * double(4 * shape_.hidden + 2 * shape_.intermediate) * device_.activation_bytes;
    // Unpicked experts are not read.
    return shape_.layer_parameters_read(tokens) * device_.weight_bytes + kv_read + acts;
}

double CostModel::all_reduce_seconds(double bytes, int32_t tp, bool inter_node) const {
    check_tp(tp);
    if (tp == 1) return 0.0;
    const LinkCosts &l = link(inter_node);
    const double steps = 2.0 * double(tp - 1);
    return steps / double(tp) * bytes / l.all_reduce_bandwidth + steps * l.all_reduce_latency;
}

double CostModel::layer_seconds(int64_t tokens, int64_t context, int32_t tp, bool across_nodes) const {
    check_tp(tp);
    // Megatron splits attention heads and the FFN; each half ends in an all-reduce of [l, H].
    const double reduce = 2.0 * all_reduce_seconds(double(tokens * shape_.hidden) * device_.activation_bytes,
                                                   tp, across_nodes);
    if (const MeasuredLayerCosts *group = group_times(tp, across_nodes)) return group->seconds(tokens, context);
    if (measured_) return measured_->seconds(tokens, context) / double(tp) + reduce;
    const double compute = layer_flops(tokens, context) / double(tp) / device_.peak_flops;
    const double memory = layer_traffic_bytes(tokens, context) / double(tp) / device_.memory_bandwidth;
    return std::max(compute, memory) + device_.layer_overhead + reduce;
}

double CostModel::embedding_seconds(int64_t tokens, int32_t tp, bool across_nodes) const {
    check_tp(tp);
    // A gather of rows; vocabulary-parallel over tp devices, combined by one all-reduce.
    const double rows = double(tokens * shape_.hidden);
    // Measured layer times are whole forward passes over the layer count: the embedding's own
    // time is already in them.
    if (group_times(tp, across_nodes) != nullptr) return 0.0;  // its all-reduce too
    if (measured_) return all_reduce_seconds(rows * device_.activation_bytes, tp, across_nodes);
    return rows * (device_.weight_bytes + device_.activation_bytes) / double(tp) / device_.memory_bandwidth +
           all_reduce_seconds(rows * device_.activation_bytes, tp, across_nodes);
}

double CostModel::head_seconds(int64_t rows, int32_t tp, bool across_nodes) const {
    check_tp(tp);
    // The vocabulary-split logits are gathered: about one all-reduce's volume of f32 rows.
    const double gather = all_reduce_seconds(double(rows * shape_.vocab) * 4.0 / 2.0, tp, across_nodes);
    // Measured layer times already hold the head's share of each forward pass (one logit row).
    if (group_times(tp, across_nodes) != nullptr) return 0.0;  // its gather too
    if (measured_) return gather;
    const double flops = 2.0 * double(rows) * double(shape_.hidden) * double(shape_.vocab);
    const double bytes = head_weight_bytes() + double(rows * shape_.vocab) * 4.0;
    const double local = std::max(flops / device_.peak_flops, bytes / device_.memory_bandwidth) / double(tp);
    return local + device_.layer_overhead + gather;
}

double CostModel::layer_weight_bytes() const { return shape_.layer_parameters() * device_.weight_bytes; }

double CostModel::embedding_weight_bytes() const {
    return double(shape_.vocab * shape_.hidden) * device_.weight_bytes;
}

double CostModel::head_weight_bytes() const {
    return double(shape_.vocab * shape_.hidden + shape_.hidden) * device_.weight_bytes;
}

double CostModel::kv_bytes_per_token_per_layer() const {
    return 2.0 * double(shape_.kv_heads * shape_.head_dim) * device_.kv_bytes;
}

double CostModel::activation_bytes(int64_t tokens, int32_t tp) const {
    check_tp(tp);
    const double q_kv = double((shape_.heads + 2 * shape_.kv_heads) * shape_.head_dim);
    const double per_token = 2.0 * double(shape_.hidden) + (q_kv + 2.0 * double(shape_.intermediate)) / double(tp);
    return double(tokens) * per_token * device_.activation_bytes;
}

double CostModel::send_seconds(int64_t tokens, bool inter_node) const {
    const double bytes = double(tokens * shape_.hidden) * device_.activation_bytes;
    const LinkCosts &l = link(inter_node);
    return bytes / l.send_bandwidth + l.send_latency;
}

CostModel measured_cost_model(const std::string &path, const ModelShape &shape, double memory_bytes) {
    const CostFile file = read_cost_document(path);
    std::vector<MeasuredLayerCosts> costs = find_measured_cost_set(file, path, shape);
    if (memory_bytes > 0)
        for (MeasuredLayerCosts &entry : costs) entry.device_spec.memory_bytes = memory_bytes;
    CostModel model(costs);
    model.use_measured_links(file.links);
    return model;
}

void validate(const ServingWorkload &w) {
    if (w.tokens < 1) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "workload: tokens is " + std::to_string(w.tokens) + ", want >= 1");
    if (w.logit_rows < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "workload: logit_rows is " + std::to_string(w.logit_rows) + ", want >= 1");
    if (w.context < 0) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "workload: context is " + std::to_string(w.context) + ", want >= 0");
    if (w.kv_tokens < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "workload: kv_tokens is " + std::to_string(w.kv_tokens) + ", want >= 0");
}

StageCostTable make_stage_cost_table(const CostModel &model, const MeshShape &mesh, const ServingWorkload &w) {
    validate(w);
    StageCostTable t;
    t.shapes = submesh_shapes(mesh);
    const int64_t layers = model.shape().layers;
    for (const SubmeshShape &s : t.shapes) {
        const int32_t tp = s.device_count();
        const bool across = s.nodes > 1;
        // KV heads shard up to their count; past it they are replicated.
        const double kv_shards = double(std::min<int64_t>(tp, model.shape().kv_heads));
        const double secs = model.layer_seconds(w.tokens, w.context, tp, across);
        const double bytes = model.layer_weight_bytes() / double(tp) +
                             double(w.kv_tokens) * model.kv_bytes_per_token_per_layer() / kv_shards;
        t.layer_seconds.emplace_back(size_t(layers), secs);
        t.layer_bytes.emplace_back(size_t(layers), bytes);
        t.embedding_seconds.push_back(model.embedding_seconds(w.tokens, tp, across));
        t.embedding_bytes.push_back(model.embedding_weight_bytes() / double(tp));
        t.head_seconds.push_back(model.head_seconds(w.logit_rows, tp, across));
        t.head_bytes.push_back(model.head_weight_bytes() / double(tp) +
                               double(w.logit_rows * model.shape().vocab) * 4.0 / double(tp));
        t.activation_bytes.push_back(model.activation_bytes(w.tokens, tp));
        t.send_seconds_intra_node.push_back(model.send_seconds(w.tokens, false));
        t.send_seconds_inter_node.push_back(model.send_seconds(w.tokens, true));
    }
    t.device_memory_bytes = model.device().memory_bytes;
    return t;
}

std::vector<ServingWorkload> request_steps(int64_t prompt_tokens, int64_t output_tokens) {
    if (prompt_tokens < 1 || output_tokens < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "request: prompt_tokens " + std::to_string(prompt_tokens) +
                                                     " and output_tokens " + std::to_string(output_tokens) +
                                                     ", want both >= 1");
    const int64_t kv = prompt_tokens + output_tokens;
    std::vector<ServingWorkload> steps{{prompt_tokens, 0, kv, 1}};
    // The prompt's step yields the first output token; each later one takes a step of its own.
    for (int64_t i = 1; i < output_tokens; ++i) steps.push_back({1, prompt_tokens + i - 1, kv, 1});
    return steps;
}

StageCostTable make_stage_cost_table(const CostModel &model, const MeshShape &mesh,
                                     const std::vector<ServingWorkload> &steps) {
    if (steps.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "request: no steps");
    StageCostTable sum = make_stage_cost_table(model, mesh, steps.front());
    auto add = [](std::vector<double> &to, const std::vector<double> &from) {
        for (size_t i = 0; i < to.size(); ++i) to[i] += from[i];
    };
    auto keep_max = [](std::vector<double> &to, const std::vector<double> &from) {
        for (size_t i = 0; i < to.size(); ++i) to[i] = std::max(to[i], from[i]);
    };
    for (size_t k = 1; k < steps.size(); ++k) {
        const StageCostTable step = make_stage_cost_table(model, mesh, steps[k]);
        for (size_t s = 0; s < sum.shapes.size(); ++s) {
            add(sum.layer_seconds[s], step.layer_seconds[s]);
            keep_max(sum.layer_bytes[s], step.layer_bytes[s]);
        }
        add(sum.embedding_seconds, step.embedding_seconds);
        add(sum.head_seconds, step.head_seconds);
        add(sum.send_seconds_intra_node, step.send_seconds_intra_node);
        add(sum.send_seconds_inter_node, step.send_seconds_inter_node);
        keep_max(sum.embedding_bytes, step.embedding_bytes);
        keep_max(sum.head_bytes, step.head_bytes);
        keep_max(sum.activation_bytes, step.activation_bytes);
    }
    return sum;
}

}  // namespace pagoda::plan
