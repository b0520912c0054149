// plan.h, serving simulation: a multi-model placement (JSON) under Gamma traffic, and the
// AlpaServe search that finds a placement for a spec.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/owned_text.hpp"
#include "capi/placement_spec.hpp"
#include "capi/sized_struct.hpp"
#include "pagoda/plan.h"
#include "plan/placement.hpp"
#include "plan/placement_partitioner.hpp"
#include "plan/placement_search.hpp"
#include "plan/simulator.hpp"
#include "plan/simulator_report.hpp"
#include "plan/workload.hpp"

using pagoda::fail;
using pagoda::guarded;
namespace plan = pagoda::plan;

namespace {

pagoda_simulate_options_t default_simulate_options() {
    pagoda_simulate_options_t o{};
    o.struct_size = sizeof(o);
    o.rate_per_model = 1.0;
    o.total_rate = 0.0;
    o.cv = 1.0;
    o.slo_seconds = 0.0;
    o.duration_seconds = 3600.0;
    o.seed = 1;
    o.overhead_seconds = 0.0;
    o.reject_late = 1;
    return o;
}

void require_finite_at_least(double value, double least, const std::string &field) {
    if (!(value >= least) || !std::isfinite(value))
        fail(PAGODA_ERR_INVALID_ARGUMENT, field + " is " + std::to_string(value) +
                                              ": want a finite number ≥ " + std::to_string(least));
}

// The options every entry point here reads, checked field by field.
pagoda_simulate_options_t checked_simulate_options(const pagoda_simulate_options_t *options,
                                                   const char *name) {
    const pagoda_simulate_options_t o = pagoda::read_sized(options, default_simulate_options(), name);
    const std::string prefix = std::string(name) + "->";
    require_finite_at_least(o.rate_per_model, 0.0, prefix + "rate_per_model");
    require_finite_at_least(o.total_rate, 0.0, prefix + "total_rate");
    require_finite_at_least(o.cv, 0.0, prefix + "cv");
    require_finite_at_least(o.slo_seconds, 0.0, prefix + "slo_seconds");
    require_finite_at_least(o.duration_seconds, 0.0, prefix + "duration_seconds");
    require_finite_at_least(o.overhead_seconds, 0.0, prefix + "overhead_seconds");
    return o;
}

// Requests per second for each of `models` models under the options (before per-model overrides).
double rate_per_model(const pagoda_simulate_options_t &o, size_t models) {
    if (o.total_rate > 0.0) return models > 0 ? o.total_rate / double(models) : 0.0;
    return o.rate_per_model;
}

plan::SimulationOptions simulation_options(const pagoda_simulate_options_t &o) {
    plan::SimulationOptions simulation;
    simulation.default_slo_seconds =
        o.slo_seconds > 0.0 ? o.slo_seconds : std::numeric_limits<double>::infinity();
    simulation.reject_late = o.reject_late != 0;
    simulation.overhead_seconds = o.overhead_seconds;
    return simulation;
}

// A model that fits no (pipeline, tensor) configuration the search may try would silently get no
// replica; say so instead.
void require_every_model_fits(const plan::PlacementSpec &spec, const plan::ReplicaCostFn &cost) {
    const int32_t devices = spec.cluster.device_count();
    const int32_t max_tensor = std::min(spec.search.max_tensor, spec.cluster.devices_per_node);
    for (uint32_t m = 0; m < spec.models.size(); ++m) {
        bool fits = false;
        for (int32_t pipeline = 1; pipeline <= spec.search.max_pipeline && !fits; ++pipeline)
            for (int32_t tensor = 1; tensor <= max_tensor && pipeline * tensor <= devices && !fits; ++tensor)
                fits = cost(m, pipeline, tensor).has_value();
        if (!fits)
            fail(PAGODA_ERR_UNSUPPORTED,
                 "spec: models[" + std::to_string(m) + "] (\"" + spec.models[m].placed.name +
                     "\") fits no configuration of at most " + std::to_string(spec.search.max_pipeline) +
                     " stages × " + std::to_string(max_tensor) + " devices with " +
                     std::to_string(spec.cluster.device_memory_bytes) + " bytes per device (" +
                     (spec.cost_file.empty() ? "cluster.device \"" + spec.device.name + "\")"
                                             : "cluster.costs \"" + spec.cost_file + "\")"));
    }
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_simulate_options_init(pagoda_simulate_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_simulate_options());
}

PAGODA_API pagoda_status_t pagoda_placement_simulate(const char *placement_json,
                                                     const pagoda_simulate_options_t *options,
                                                     char **result_json) {
    return guarded("pagoda_placement_simulate", [&] {
        if (placement_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "placement_json is NULL");
        if (result_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "result_json is NULL");
        const pagoda_simulate_options_t o = checked_simulate_options(options, "options");

        const plan::Placement placement = plan::placement_from_json(placement_json, "placement");
        const size_t models = placement.models.size();
        const std::vector<plan::ArrivalProcess> traffic(models, {rate_per_model(o, models), o.cv});
        plan::GammaWorkload workload(traffic, o.duration_seconds, o.seed);
        plan::Simulator simulator(placement, simulation_options(o));
        *result_json = pagoda::owned_text(plan::simulation_to_json(simulator.run(workload), placement));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_placement_search(const char *spec_json,
                                                   const pagoda_simulate_options_t *workload,
                                                   char **placement_json) {
    return guarded("pagoda_placement_search", [&] {
        if (spec_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "spec_json is NULL");
        if (placement_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "placement_json is NULL");
        const pagoda_simulate_options_t o = checked_simulate_options(workload, "workload");
        plan::PlacementSpec spec = plan::parse_placement_spec(spec_json, "spec");
        spec.search.simulation = simulation_options(o);
        // The spec's overhead is the serving system's own, so it travels with the placement.
        spec.search.simulation.overhead_seconds += spec.overhead_seconds;

        // Costs per (model, pipeline, tensor) from the Alpa stage partitioner (AlpaServe §4.1).
        std::vector<plan::CostModel> costs;
        for (const plan::SpecModel &model : spec.models) costs.push_back(plan::spec_cost_model(spec, model));
        // Without a memory_bytes of its own, a measured cluster has its smallest measured device's.
        if (!spec.cost_file.empty() && !spec.memory_given)
            spec.cluster.device_memory_bytes =
                std::min_element(costs.begin(), costs.end(), [](const plan::CostModel &a, const plan::CostModel &b) {
                    return a.device().memory_bytes < b.device().memory_bytes;
                })->device().memory_bytes;
        const plan::ReplicaCostFn cost = plan::replica_costs_from_partitioner(
            [&](uint32_t m, const plan::MeshShape &mesh) {
                return plan::make_stage_cost_table(costs[m], mesh, spec.request);
            },
            {spec.cluster.devices_per_node, 16});
        require_every_model_fits(spec, cost);

        // The very requests pagoda_placement_simulate() draws for the same options (and the same
        // rate for every model), so the attainment found here is the one it reports.
        std::vector<plan::PlacedModel> models;
        std::vector<plan::ArrivalProcess> traffic;
        for (const plan::SpecModel &model : spec.models) {
            models.push_back(model.placed);
            const double rate = model.rate >= 0.0 ? model.rate : rate_per_model(o, spec.models.size());
            traffic.push_back({rate, o.cv});
        }
        plan::GammaWorkload requests(traffic, o.duration_seconds, o.seed);
        const plan::Trace trace = plan::record(requests);

        const auto start = std::chrono::steady_clock::now();
        const plan::SearchResult found =
            plan::search_placement(models, spec.cluster, cost, trace, spec.search);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        plan::Placement placement = found.placement;
        placement.overhead_seconds = spec.overhead_seconds;
        nlohmann::json out = nlohmann::json::parse(plan::placement_to_json(placement));
        out["search"] = {{"slo_attainment", found.score.slo_attainment},
                         {"requests", found.score.requests},
                         {"simulations", found.stats.simulations},
                         {"greedy_runs", found.stats.greedy_runs},
                         {"seconds", seconds},
                         {"costs", spec.cost_file.empty() ? "analytic" : "measured:" + spec.cost_file}};
        // Per model, the tensor-parallel degrees whose times were measured on their devices;
        // the others' all-reduces are modelled.
        if (!spec.cost_file.empty()) {
            nlohmann::json timed = nlohmann::json::object();
            for (size_t m = 0; m < spec.models.size(); ++m)
                timed[spec.models[m].placed.name] = costs[m].measured_tensor_parallel();
            out["search"]["measured_tensor_parallel"] = timed;
            // One file for every model: their links are the same.
            if (!costs.empty()) out["search"]["link_source"] = costs.front().link_source();
        }
        *placement_json = pagoda::owned_text(out.dump());
        return PAGODA_OK;
    });
}

}  // extern "C"
