// How a model is laid out on a mesh: pipeline stages (ranges of decoder layers) over groups of
// the mesh's devices, each stage tensor-parallel over its group (Alpa's stages over sub-meshes,
// Megatron's tensor parallelism inside a stage; a mixture of experts' experts also split whole
// over `ep` groups of the stage's devices), and each such group repeated `kvp` times for
// cache parallelism: the kvp copies of a device hold the same weights and split every
// sequence's KV cache between them, block by block (thesis Ch. 4). Made from what a plan says
// (where the layers go and how wide each stage is), as plain data so that the mesh needs nothing
// of the planner's room, and the mesh, which says which devices there are and, when it names
// axes, how they are arranged. Every mismatch between the two is refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mesh/mesh.hpp"

namespace pagoda::mesh {

// The counts a tensor-parallel split divides.
struct SplitShape {
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t intermediate = 0;
    int64_t experts = 0;  // 0: a dense model
    int64_t expert_intermediate = 0;
};

// What a plan asks of a layout: its stages (layer ranges and widths) for one kvp copy of a mesh
// of `devices` devices, for a model of `shape`.
struct StageSpec {
    int64_t first_layer = 0;  // decoder layers [first_layer, end_layer)
    int64_t end_layer = 0;
    int32_t tensor_parallel = 1;  // the stage's width
    int32_t expert_parallel = 1;  // groups of its devices the experts split into (divides the width)
};
struct LayoutSpec {
    int32_t devices = 0;
    std::vector<StageSpec> stages;
    SplitShape shape;
};

struct StagePlacement {
    int32_t first_layer = 0;  // decoder layers [first_layer, end_layer)
    int32_t end_layer = 0;
    int32_t tensor_parallel = 1;
    int32_t expert_parallel = 1;
    std::vector<int32_t> devices;  // mesh device indices, devices[kvp_rank · tensor_parallel + tp_rank]

    bool operator==(const StagePlacement &) const = default;
};

// Where one mesh device works.
struct DevicePlacement {
    int32_t stage = 0;
    int32_t tp_rank = 0;
    int32_t kvp_rank = 0;

    bool operator==(const DevicePlacement &) const = default;
};

class Layout {
public:
    // The whole model on one device (device 0 of a one-device mesh).
    static Layout single_device(int32_t n_layers);
    // The plan's stages on `mesh`'s devices. With axes, a device's coordinates come from its
    // place in the list (the last axis varying fastest): its `pp` coordinate is its stage, its
    // `ep` and `tp` coordinates its rank there (ep coordinate · tp + tp coordinate: a stage is
    // tp · ep devices wide, its attention split over all of them, its experts over the ep groups
    // of tp devices) and its `kvp`
    // coordinate its share of the cache; the plan then lays out one kvp copy (mesh devices /
    // kvp). Without axes, stages take the devices in list order. Throws INVALID_ARGUMENT naming
    // what disagrees (stage count against pp, a stage's width against tp · ep, the device
    // count, a width that does not divide the heads or ep that does not divide the experts), and
    // UNSUPPORTED for what is not executed yet (dp, stages over several backends).
    Layout(const Mesh &mesh, const LayoutSpec &plan);

    const std::vector<StagePlacement> &stages() const noexcept { return stages_; }
    const DevicePlacement &place(size_t device) const { return places_.at(device); }
    size_t device_count() const noexcept { return places_.size(); }
    int32_t kv_parallel() const noexcept { return kvp_; }
    int32_t n_layers() const noexcept { return stages_.empty() ? 0 : stages_.back().end_layer; }
    // "pp=2 (layers 0-2 | 3-4), tp=2 on stage 0 and 1": for messages and logs.
    std::string describe() const;

    bool operator==(const Layout &) const = default;

private:
    Layout() = default;
    std::vector<StagePlacement> stages_;
    std::vector<DevicePlacement> places_;
    int32_t kvp_ = 1;
};

// Throws INVALID_ARGUMENT unless a stage `tp` devices wide can split a model of `shape`
// (Megatron's split: query heads and the MLP's columns evenly; KV heads evenly when tp ≤ their
// count, else each replicated over tp / n_kv_heads devices, as vLLM does).
void check_tensor_parallel(const SplitShape &shape, int32_t tp);
// Throws INVALID_ARGUMENT unless a stage `width` devices wide can split its experts into `ep`
// groups: ep divides the width, the model has experts and ep divides them, and each expert's
// columns split over the width / ep devices of a group.
void check_expert_parallel(const SplitShape &shape, int32_t width, int32_t ep);

}  // namespace pagoda::mesh
