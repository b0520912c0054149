// The serving simulator AlpaServe scores placements with (§4.3, §5): a centralised controller
// sends each request to a group holding its model, every group serves its queue first come first
// served through its pipeline, and a request that cannot finish within its SLO is rejected on
// arrival.
//
// No event heap is needed: dispatch and admission are admission.hpp's stage-clock recurrence
// (TeraPipe's grid recurrence; AlpaServe's GroupManager admission check), which the server
// uses too. A pipeline therefore takes a new request every max latency_s (throughput) and takes
// Σ latency_s for one alone (latency). Each request costs O(replicas × stages), and a run is
// deterministic. Without reject_late every request is served and late ones count as misses.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "plan/admission.hpp"
#include "plan/placement.hpp"
#include "plan/workload.hpp"

namespace pagoda::plan {

struct SimulationOptions {
    // The SLO of models whose Placement entry gives none (+inf: they never miss).
    double default_slo_seconds = std::numeric_limits<double>::infinity();
    // Reject at arrival a request that would finish after its deadline (AlpaServe §4.3).
    bool reject_late = true;
    // Added to every request's latency besides the placement's own overhead (controller and
    // runtime overhead; AlpaServe's simulator uses a few ms).
    double overhead_seconds = 0.0;
    // Only requests arriving in [measure_from, measure_until) are counted (AlpaServe drops a
    // warm-up and cool-down of 10 s); the others still occupy the groups.
    double measure_from = 0.0;
    double measure_until = std::numeric_limits<double>::infinity();
};

// Throws Error(INVALID_ARGUMENT) naming the field: a non-positive SLO, a negative or non-finite
// overhead, or an empty or inverted measuring window.
void validate(const SimulationOptions &options);

struct LatencySummary {  // seconds, over served requests
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct ModelOutcome {
    uint64_t requests = 0;
    uint64_t within_slo = 0;  // served and finished within the SLO
    uint64_t rejected = 0;
};

struct SimulationResult {
    uint64_t requests = 0;    // counted (in the measuring window)
    uint64_t served = 0;
    uint64_t rejected = 0;
    uint64_t within_slo = 0;
    double slo_attainment = 1.0;  // within_slo / requests; rejected requests count as misses
    double rejected_share = 0.0;  // rejected / requests
    LatencySummary latency;       // quantiles within 0.05 % (simulator_histogram.hpp)
    // Per group: busy stage-seconds / (stages × horizon), where the horizon runs from 0 to the
    // last arrival or finish, whichever is later. All requests count here, measured or not.
    std::vector<double> group_utilisation;
    std::vector<ModelOutcome> per_model;
    double horizon_seconds = 0.0;
};

class LatencyHistogram;

// Fills the totals of `result` from its per_model outcomes (requests, served, rejected,
// within_slo, attainment and rejected share) and its latency statistics from `served`, the
// latencies of the served requests: what the simulator reports, for any counted run (a
// measured one too).
void summarise_outcomes(SimulationResult &result, const LatencyHistogram &served);

class Simulator {
public:
    // Validates both (Error(INVALID_ARGUMENT)); the placement is copied into flat tables.
    Simulator(const Placement &placement, const SimulationOptions &options);

    // Serves `source` to its end from idle groups. A request for a model id ≥ the placement's
    // model count throws Error(INVALID_ARGUMENT). Each call starts afresh.
    SimulationResult run(ArrivalSource &source);

private:
    SimulationOptions options_;
    AdmissionControl control_;  // the placement's tables and clocks, reset by each run
};

}  // namespace pagoda::plan
