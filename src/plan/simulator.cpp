#include "plan/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"
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

Simulator::Simulator(const Placement &placement, const SimulationOptions &options)
    : options_(options), model_count_(uint32_t(placement.models.size())) {
    validate(placement);
    validate(options);
    slo_.reserve(model_count_);
    for (const PlacedModel &model : placement.models)
        slo_.push_back(std::isfinite(model.slo_seconds) ? model.slo_seconds
                                                        : options.default_slo_seconds);
    holders_.resize(model_count_);
    for (uint32_t g = 0; g < placement.groups.size(); ++g) {
        const PlacementGroup &group = placement.groups[g];
        first_stage_.push_back(total_stages_);
        stage_count_.push_back(uint32_t(group.pipeline));
        total_stages_ += uint32_t(group.pipeline);
        for (const Replica &replica : group.replicas) {
            holders_[replica.model].push_back({g, uint32_t(latencies_.size())});
            latencies_.insert(latencies_.end(), replica.stage_seconds.begin(),
                              replica.stage_seconds.end());
        }
    }
}

SimulationResult Simulator::run(ArrivalSource &source) {
    const size_t group_count = first_stage_.size();
    std::vector<double> clock(total_stages_, 0.0);  // when each stage becomes free
    std::vector<double> busy(group_count, 0.0);     // stage-seconds of work per group
    LatencyHistogram histogram;
    SimulationResult result;
    result.per_model.resize(model_count_);
    double horizon = 0.0;
    const double overhead = options_.overhead_seconds;

    Arrival arrival;
    while (source.next(arrival)) {
        if (arrival.model >= model_count_)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "simulation: a request at t = " + std::to_string(arrival.time) +
                            " s asks for model " + std::to_string(arrival.model) +
                            " but the placement has " + std::to_string(model_count_) + " models");
        const double now = arrival.time;
        horizon = std::max(horizon, now);
        const std::vector<Candidate> &holders = holders_[arrival.model];

        // The replica where this request would finish first.
        const Candidate *best = nullptr;
        double best_finish = std::numeric_limits<double>::infinity();
        for (const Candidate &candidate : holders) {
            const double *stage_clock = clock.data() + first_stage_[candidate.group];
            const double *latency = latencies_.data() + candidate.first_latency;
            double t = now;
            for (uint32_t s = 0, n = stage_count_[candidate.group]; s < n; ++s)
                t = std::max(stage_clock[s], t) + latency[s];
            if (t < best_finish) {
                best_finish = t;
                best = &candidate;
            }
        }

        const double slo = slo_[arrival.model];
        const double latency = best_finish + overhead - now;
        const bool admitted = best != nullptr && !(options_.reject_late && latency > slo);
        if (admitted) {
            double *stage_clock = clock.data() + first_stage_[best->group];
            const double *stage_latency = latencies_.data() + best->first_latency;
            double t = now;
            double work = 0.0;
            for (uint32_t s = 0, n = stage_count_[best->group]; s < n; ++s) {
                t = std::max(stage_clock[s], t) + stage_latency[s];
                stage_clock[s] = t;
                work += stage_latency[s];
            }
            busy[best->group] += work;
            horizon = std::max(horizon, t + overhead);
        }

        if (now < options_.measure_from || now >= options_.measure_until) continue;
        ModelOutcome &outcome = result.per_model[arrival.model];
        ++outcome.requests;
        if (!admitted) {
            ++outcome.rejected;
            continue;
        }
        histogram.add(latency);
        if (latency <= slo) ++outcome.within_slo;
    }

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
    result.latency = {histogram.mean(), histogram.quantile(0.50), histogram.quantile(0.90),
                      histogram.quantile(0.99), histogram.max()};
    result.horizon_seconds = horizon;
    result.group_utilisation.resize(group_count, 0.0);
    for (size_t g = 0; g < group_count; ++g)
        if (horizon > 0.0 && stage_count_[g] > 0)
            result.group_utilisation[g] = busy[g] / (double(stage_count_[g]) * horizon);
    return result;
}

}  // namespace pagoda::plan
