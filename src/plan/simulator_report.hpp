// A simulation's outcome as one JSON object (what `pagoda simulate --json` and
// pagoda_placement_simulate() print): counts, attainment, latency statistics, utilisation.
#pragma once

#include <string>

#include "plan/placement.hpp"
#include "plan/simulator.hpp"

namespace pagoda::plan {

// {"requests", "served", "rejected", "within_slo", "slo_attainment", "rejected_share",
//  "latency": {"mean", "p50", "p90", "p99", "max"}, "group_utilisation": [...],
//  "horizon_seconds", "per_model": [{"name", "requests", "within_slo", "rejected"}]}
// `placement` names the models (result.per_model is indexed like placement.models).
std::string simulation_to_json(const SimulationResult &result, const Placement &placement);

}  // namespace pagoda::plan
