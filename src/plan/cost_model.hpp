// How long a model's pieces take and how much memory they hold on a device kind, at a tensor-
// parallel degree: the numbers the planners optimise over. Layer times come from a roofline
// (FLOPs against peak, bytes against bandwidth) or from measurements of the real backend
// (MeasuredLayerCosts, TeraPipe Eq. 9); communication from the links measured between devices
// (MeasuredLink) where it is given them, else from the device spec's assumed links.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/device_spec.hpp"
#include "plan/measured_costs.hpp"
#include "plan/model_shape.hpp"
#include "plan/stage_partition.hpp"

namespace pagoda::plan {

class CostModel {
public:
    // Analytic: everything from the roofline of `device`.
    CostModel(const ModelShape &shape, const DeviceSpec &device);
    // Measured: layer times from `costs` (divided by t beyond one device, plus the all-reduces),
    // the rest from costs.device_spec.
    explicit CostModel(const MeasuredLayerCosts &costs);
    // Measured, with tensor-parallel groups timed on their devices (find_measured_cost_set's
    // order: the one-device entry first): a group of a timed degree within a node takes its
    // times as measured, all-reduces included; other degrees are modelled from one device.
    explicit CostModel(const std::vector<MeasuredLayerCosts> &costs);

    // Prices all-reduces and sends with the links measured for this model's backend (the measured
    // costs' backend, else the device spec's name), as node_links() picks them for a node and
    // across nodes; a level with no measured link keeps the device spec's. Returns the number of
    // levels (0–2) now measured.
    int use_measured_links(const std::vector<MeasuredLink> &links);
    // Where the link terms come from: "assumed", or per level, e.g. "measured within_machine
    // within nodes; assumed across nodes".
    std::string link_source() const;

    const ModelShape &shape() const noexcept { return shape_; }
    const DeviceSpec &device() const noexcept { return device_; }
    bool measured() const noexcept { return measured_.has_value(); }
    const std::optional<MeasuredLayerCosts> &measurements() const noexcept { return measured_; }
    // The tensor-parallel degrees timed on their groups (1 when measured on one device).
    std::vector<int32_t> measured_tensor_parallel() const;

    // One decoder layer for `tokens` new tokens after `context` cached ones, split `tp` ways
    // (Megatron: two all-reduces of the layer's output per layer), over the network when the
    // tp devices span nodes.
    double layer_seconds(int64_t tokens, int64_t context, int32_t tp, bool across_nodes = false) const;
    double embedding_seconds(int64_t tokens, int32_t tp, bool across_nodes = false) const;
    // The final norm and LM head for `rows` logit rows (usually one per sequence).
    double head_seconds(int64_t rows, int32_t tp, bool across_nodes = false) const;

    // The roofline's inputs for one layer.
    double layer_flops(int64_t tokens, int64_t context) const;
    double layer_traffic_bytes(int64_t tokens, int64_t context) const;

    // Memory of the whole piece (divide by the shard count for one device's part).
    double layer_weight_bytes() const;
    double embedding_weight_bytes() const;
    double head_weight_bytes() const;  // a tied head still needs its copy on the last stage
    double kv_bytes_per_token_per_layer() const;
    // Transient bytes per device while a layer runs `tokens` tokens split `tp` ways.
    double activation_bytes(int64_t tokens, int32_t tp) const;

    // Moving the activations of `tokens` tokens from one stage to the next.
    double send_seconds(int64_t tokens, bool inter_node) const;
    // Ring all-reduce of `bytes` across `tp` devices: 2(t−1)/t · bytes / bandwidth plus
    // 2(t−1) message latencies; 0 for one device. Measured links were timed on two devices, so
    // wider groups are this formula's extrapolation of them.
    double all_reduce_seconds(double bytes, int32_t tp, bool inter_node) const;

private:
    // One level's link: what an all-reduce and a send pay per message and per byte.
    struct LinkCosts {
        double all_reduce_latency = 0, all_reduce_bandwidth = 0;
        double send_latency = 0, send_bandwidth = 0;
        std::string measured_path;  // "" = the device spec's assumption
    };
    const LinkCosts &link(bool inter_node) const noexcept { return inter_node ? across_nodes_ : within_node_; }

    ModelShape shape_;
    DeviceSpec device_;
    LinkCosts within_node_, across_nodes_;
    std::optional<MeasuredLayerCosts> measured_;
    std::map<int32_t, MeasuredLayerCosts> measured_groups_;  // tp > 1, timed on the group
    // The group's own times for `tp` devices, or null when they are modelled.
    const MeasuredLayerCosts *group_times(int32_t tp, bool across_nodes) const;
};

// The measured model of `shape` from the cost file at `path`, read once: its layer times
// (find_measured_cost_set) priced with its links (use_measured_links); `memory_bytes` > 0
// replaces the measured devices' memory. Throws as find_measured_cost_set.
CostModel measured_cost_model(const std::string &path, const ModelShape &shape, double memory_bytes = 0);

// What one pipeline step of the served batch looks like, for sizing stage costs.
struct ServingWorkload {
    int64_t tokens = 1;       // new tokens in the step (e.g. the prompt's length for prefill)
    int64_t context = 0;      // tokens already cached before them
    int64_t kv_tokens = 0;    // KV-cache tokens each layer reserves (all sequences together)
    int64_t logit_rows = 1;   // rows the LM head computes
};

// The stage partitioner's table for `model` on `mesh`: every Alpa sub-mesh shape, each stage
// tensor-parallel over all of its devices. Throws as submesh_shapes and validate(ServingWorkload).
StageCostTable make_stage_cost_table(const CostModel &model, const MeshShape &mesh,
                                     const ServingWorkload &workload);

// The steps of one generated request as an engine runs it: the prompt in one step (one logit
// row), then a step of one token for each further output token after the tokens before it;
// every step reserves KV for the whole request. Throws Error(INVALID_ARGUMENT) unless both
// counts are ≥ 1.
std::vector<ServingWorkload> request_steps(int64_t prompt_tokens, int64_t output_tokens);

// The table for running all of `steps` one after another: seconds summed over the steps, bytes
// the most any step needs. Throws as the one-step table, and INVALID_ARGUMENT for no steps.
StageCostTable make_stage_cost_table(const CostModel &model, const MeshShape &mesh,
                                     const std::vector<ServingWorkload> &steps);

// Throws Error(INVALID_ARGUMENT) naming the field: tokens and logit_rows ≥ 1, the rest ≥ 0.
void validate(const ServingWorkload &workload);

}  // namespace pagoda::plan
