#include "plan/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"
#include "plan/admission.hpp"
#include "plan/simulator_histogram.hpp"

namespace pagoda::plan {

void validate(const SimulationOptions &options) {
    if (!(options.default_slo_seconds > 0.0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "simulation: default_slo_seconds = " +
                        std::to_string(options.default_slo_seconds) + " is not > 0");
    if (!(options.overhead_seconds >= 0.0) || !std::isfinite(options.overhead_seconds))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "simulation: overhead_seconds = " + std::to_string(options.overhead_seconds) +
                        " is not a finite number ≥ 0");
    if (!(options.measure_from >= 0.0) || !(options.measure_until > options.measure_from))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "simulation: the measuring window [" + std::to_string(options.measure_from) +
                        ", " + std::to_string(options.measure_until) + ") is empty or negative");
}

namespace {

// The placement, once validate() has passed it and the options.
const Placement &validated(const Placement &placement, const SimulationOptions &options) {
    validate(placement);
    validate(options);
    return placement;
}

AdmissionRules rules_of(const SimulationOptions &options) {
    AdmissionRules rules;
    rules.default_slo_seconds = options.default_slo_seconds;
    rules.reject_late = options.reject_late;
    rules.overhead_seconds = options.overhead_seconds;
    return rules;
}

}  // namespace

void summarise_outcomes(SimulationResult &result, const LatencyHistogram &served) {
    result.requests = result.rejected = result.within_slo = 0;
    for (const ModelOutcome &outcome : result.per_model) {
        result.requests += outcome.requests;
        result.rejected += outcome.rejected;
        result.within_slo += outcome.within_slo;
    }
    result.served = result.requests - result.rejected;
    if (result.requests > 0) {
        result.slo_attainment = double(result.within_slo) / double(result.requests);
        result.rejected_share = double(result.rejected) / double(result.requests);
    }
    result.latency = {served.mean(), served.quantile(0.50), served.quantile(0.90),
                      served.quantile(0.99), served.max()};
}

Simulator::Simulator(const Placement &placement, const SimulationOptions &options)
    : options_(options), control_(validated(placement, options), rules_of(options)) {}

SimulationResult Simulator::run(ArrivalSource &source) {
    control_.reset();
    const uint32_t model_count = control_.model_count();
    const size_t group_count = control_.group_count();
    std::vector<double> busy(group_count, 0.0);  // stage-seconds of work per group
    LatencyHistogram histogram;
    SimulationResult result;
    result.per_model.resize(model_count);
    double horizon = 0.0;

    Arrival arrival;
    while (source.next(arrival)) {
        if (arrival.model >= model_count)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "simulation: a request at t = " + std::to_string(arrival.time) +
                            " s asks for model " + std::to_string(arrival.model) +
                            " but the placement has " + std::to_string(model_count) + " models");
        const double now = arrival.time;
        horizon = std::max(horizon, now);
        const Admission a = control_.admit(arrival.model, now);
        if (a.admitted) {
            busy[size_t(a.group)] += a.work;
            horizon = std::max(horizon, now + a.latency);  // its finish, overheads included
        }

        if (now < options_.measure_from || now >= options_.measure_until) continue;
        ModelOutcome &outcome = result.per_model[arrival.model];
        ++outcome.requests;
        if (!a.admitted) {
            ++outcome.rejected;
            continue;
        }
        histogram.add(a.latency);
        if (a.latency <= a.slo) ++outcome.within_slo;
    }

    summarise_outcomes(result, histogram);
    result.horizon_seconds = horizon;
    result.group_utilisation.resize(group_count, 0.0);
    for (size_t g = 0; g < group_count; ++g)
        if (horizon > 0.0 && control_.stage_count(g) > 0)
            result.group_utilisation[g] = busy[g] / (double(control_.stage_count(g)) * horizon);
    return result;
}

}  // namespace pagoda::plan
