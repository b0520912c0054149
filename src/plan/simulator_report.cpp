#include "plan/simulator_report.hpp"

#include <nlohmann/json.hpp>

namespace pagoda::plan {

std::string simulation_to_json(const SimulationResult &result, const Placement &placement) {
    nlohmann::ordered_json out;
    out["requests"] = result.requests;
    out["served"] = result.served;
    out["rejected"] = result.rejected;
    out["within_slo"] = result.within_slo;
    out["slo_attainment"] = result.slo_attainment;
    out["rejected_share"] = result.rejected_share;
    out["latency"] = {{"mean", result.latency.mean}, {"p50", result.latency.p50},
                      {"p90", result.latency.p90},   {"p99", result.latency.p99},
                      {"max", result.latency.max}};
    out["group_utilisation"] = result.group_utilisation;
    out["horizon_seconds"] = result.horizon_seconds;
    nlohmann::ordered_json models = nlohmann::ordered_json::array();
    for (size_t m = 0; m < result.per_model.size(); ++m) {
        const ModelOutcome &outcome = result.per_model[m];
        models.push_back({{"name", m < placement.models.size() ? placement.models[m].name : ""},
                          {"requests", outcome.requests},
                          {"within_slo", outcome.within_slo},
                          {"rejected", outcome.rejected}});
    }
    out["per_model"] = std::move(models);
    return out.dump();
}

}  // namespace pagoda::plan
