// A decoder layer's time measured on a real backend (TeraPipe Eq. 9): t(l, 0) for every l on
// a granularity grid plus a fitted context term, with the fit's error, and the file that keeps
// such measurements keyed by backend, device and model shape, beside the links measured between
// devices (measured_links.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/context_fit.hpp"
#include "plan/device_spec.hpp"
#include "plan/measured_links.hpp"
#include "plan/model_shape.hpp"

namespace pagoda::plan {

struct MeasuredLayerCosts {
    std::string backend;  // "cpu"
    std::string device;   // what was measured, e.g. "cpu:0 AMD EPYC, 2 threads"
    std::string dtype;    // the weights' dtype, e.g. "f32"
    ModelShape shape;
    // The devices the forward passes ran over as one tensor-parallel group (1: one device).
    // A group's times hold its all-reduces, so the planner takes them as they are.
    int32_t tensor_parallel = 1;
    DeviceSpec device_spec;  // memory and links, for what was not measured (all-reduce, memory)
    int64_t granularity = 0;                 // no_context_seconds[i] = t((i+1)·granularity, 0)
    std::vector<double> no_context_seconds;  // per layer
    ContextFit fit;                          // per layer
    double context_fit_error = 0;  // relative error of the fitted overhead on held-out points
    double total_fit_error = 0;    // mean relative error of t(l, c) on held-out points
    int64_t fit_samples = 0;
    int64_t holdout_samples = 0;

    // Seconds of one layer: t(l, 0) (interpolated between grid points, extrapolated past the
    // last from the last two) plus the context term.
    double seconds(int64_t tokens, int64_t context) const;
    int64_t max_tokens() const { return granularity * int64_t(no_context_seconds.size()); }
};

// Throws Error(INVALID_ARGUMENT) naming the field at fault.
void validate(const MeasuredLayerCosts &costs);

// One entry as the cost file holds it (below), as JSON text.
std::string measured_costs_json(const MeasuredLayerCosts &costs);

// Cost files are JSON: {"format": "pagoda-costs", "version": 1, "entries": [entry, ...],
// "links": [link, ...]}, an entry holding every field above ("shape" and "device_spec" as
// objects, "fit" as {"a0","a1","a2","a3"}; "tensor_parallel" may be missing, meaning 1), a link
// as measured_link_to_json() writes it ("links" may be missing: none measured). Reading throws
// Error(IO) naming the path when it cannot be read and Error(FORMAT) naming the path and the
// field for malformed content.
std::vector<MeasuredLayerCosts> read_cost_file(const std::string &path);
// Both parts of the file, read once; throws as read_cost_file.
struct CostFile {
    std::vector<MeasuredLayerCosts> entries;
    std::vector<MeasuredLink> links;
};
CostFile read_cost_document(const std::string &path);
// The file's measured links (none when it has no "links"); throws as read_cost_file.
std::vector<MeasuredLink> read_measured_links(const std::string &path);
// Adds `costs` to the file at `path` (created if missing), replacing an entry with the same
// backend, device, shape and tensor-parallel degree and keeping its links. Throws Error(IO)
// naming the path when it cannot be written.
void save_measured_costs(const std::string &path, const MeasuredLayerCosts &costs);
// Adds `link` to the file's links, replacing one of the same backend and path and keeping the
// layer entries; throws as save_measured_costs, and INVALID_ARGUMENT for an invalid link.
void save_measured_link(const std::string &path, const MeasuredLink &link);
// The one-device entry for `shape` (and `backend`/`device` unless empty); throws
// Error(NOT_FOUND) listing what the file holds.
MeasuredLayerCosts find_measured_costs(const std::string &path, const ModelShape &shape,
                                       const std::string &backend = "", const std::string &device = "");
// What the file holds for `shape`: the one-device entry (as find_measured_costs, first) and the
// first entry of each tensor-parallel degree timed on its group, in increasing degree.
std::vector<MeasuredLayerCosts> find_measured_cost_set(const std::string &path, const ModelShape &shape);
// The same from a file already read (`path` names it in messages).
std::vector<MeasuredLayerCosts> find_measured_cost_set(const CostFile &file, const std::string &path,
                                                       const ModelShape &shape);

}  // namespace pagoda::plan
