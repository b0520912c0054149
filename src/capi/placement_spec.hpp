// The spec pagoda_placement_search() reads (schema in include/pagoda/plan.h): a cluster, the
// models with their shapes, SLOs and rates, how big one request is, and the search's knobs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/cost_model.hpp"
#include "plan/device_spec.hpp"
#include "plan/model_shape.hpp"
#include "plan/placement.hpp"
#include "plan/placement_search.hpp"

namespace pagoda::plan {

struct SpecModel {
    PlacedModel placed;  // name and SLO (+inf when the spec gives none)
    ModelShape shape;
    double rate = -1.0;  // requests per second; < 0: the workload options' rate
};

struct PlacementSpec {
    std::vector<SpecModel> models;
    ClusterShape cluster;  // device_memory_bytes = device.memory_bytes
    DeviceSpec device;     // the preset, with the spec's memory_bytes when it gives one
    std::string cost_file;        // measured layer costs per model shape; "" = the preset's roofline
    bool memory_given = false;    // memory_bytes was in the spec (it overrides the cost file's)
    std::vector<ServingWorkload> request;  // the steps one request takes
    double overhead_seconds = 0;  // what the serving system adds to every request
    SearchOptions search;  // only the spec's knobs; the caller fills search.simulation
};

// Parses and checks `text`. Throws Error: FORMAT naming `source` and the byte for malformed JSON,
// or the field's path (e.g. models[1].shape.hidden) for a wrong type or an unknown field;
// INVALID_ARGUMENT naming the field for inconsistent values; NOT_FOUND for an unknown device
// preset; IO for an unreadable config.json (and what parse_hf_config throws for a bad one).
PlacementSpec parse_placement_spec(std::string_view text, const std::string &source);

// The cost model of `model`: its shape's entry in the spec's cost file (with the spec's memory
// when it gives one), or the device preset's roofline without one. Throws NOT_FOUND naming the
// model and its shape when the file has no entry for it, and what read_cost_file throws.
CostModel spec_cost_model(const PlacementSpec &spec, const SpecModel &model);

}  // namespace pagoda::plan
