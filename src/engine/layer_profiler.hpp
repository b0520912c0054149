// Measures a model's decoder-layer time on a real backend, the way TeraPipe profiles (§3.3,
// Eq. 9): t(l, 0) for every l on a granularity grid, then t(l, c) on a coarser (l, c) grid to
// fit the context term a2·c + a3·l·c (context_fit.hpp; each overhead against a t(l, 0) whose
// repeats interleave with its own), a third of the grid held out to report the fit's error. Whole forward passes are timed
// (one sequence, logits for its last token only) and divided by the layer count, so the
// embedding and LM head are spread over the layers:
// profile a model with a small vocabulary to keep that share negligible. Over several devices
// the passes run as one tensor-parallel group (Megatron's split, the mesh executor's workers),
// so the times hold the group's all-reduces. It runs exec's forward pass, so it lives above
// both exec and plan: the planner only takes the numbers it returns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "plan/device_spec.hpp"
#include "plan/measured_costs.hpp"
#include "runtime/device.hpp"

namespace pagoda::engine {

// Devices that run one forward pass together, as a tensor-parallel group (one device: alone).
using DeviceGroup = std::vector<std::shared_ptr<const runtime::Device>>;

struct ProfileOptions {
    int64_t max_tokens = 512;   // L: the largest slice and the largest context profiled
    int64_t granularity = 8;    // t(l, 0) is measured for l = g, 2g, …, L
    int32_t grid = 8;           // the context grid has grid × grid points, l and c in L/grid steps
    int32_t repeats = 3;        // timed runs per point; the fastest is kept
    int32_t warmup = 1;         // untimed runs before them
    int32_t block_size = 16;    // KV-cache block size
    // Other devices that run the same point (new tokens after the same cached context) on
    // their own thread, as a group of their own, while each point is timed. Two pipeline stages on two cores of one socket share the memory
    // bandwidth and the last-level cache, so a stage's cost is its time beside a busy
    // neighbour; timed alone on an idle machine it comes out too low. Empty: timed alone.
    DeviceGroup neighbour;
};

// Throws Error(INVALID_ARGUMENT) naming the option at fault (L not a multiple of g, L/grid not
// a multiple of g, non-positive values).
void validate(const ProfileOptions &options);

// Profiles `model` on `devices` (its tensor_parallel is their count). `backend` and
// `description` name what was measured in the result; `spec` supplies the memory and link
// numbers the measurements do not cover. Throws what the forward pass, the layout (a group
// that does not divide the heads) and KV allocation throw (INVALID_ARGUMENT, BACKEND,
// OUT_OF_MEMORY), and as validate().
plan::MeasuredLayerCosts profile_layer_costs(std::shared_ptr<const model::Model> model, const DeviceGroup &devices,
                                             const std::string &backend, const std::string &description,
                                             const plan::DeviceSpec &spec, const ProfileOptions &options);

// One (tokens, context) point to time.
struct LayerPoint {
    int64_t tokens = 0;
    int64_t context = 0;
};

// Seconds per layer of each point, timed as profile_layer_costs times them (the fastest of
// options.repeats after options.warmup, beside options.neighbour when set), for checking a
// prediction against the very points a slicing runs. Every point needs
// tokens + context ≤ 2·options.max_tokens. Throws as profile_layer_costs.
std::vector<double> measure_layer_points(std::shared_ptr<const model::Model> model, const DeviceGroup &devices,
                                         const std::vector<LayerPoint> &points, const ProfileOptions &options);

}  // namespace pagoda::engine
