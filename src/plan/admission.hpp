// AlpaServe's controller (§4.3): which replica a request goes to and whether it is admitted at
// all, from the groups' stage clocks (when each stage becomes free). A stage is busy for its
// latency and takes requests in arrival order, so a request's finish time on every stage is
// known when it arrives:
//     f_0 = arrival;  f_s = max(clock_s, f_{s−1}) + latency_s;  clock_s ← f_s
// Dispatch: among the groups holding the model, the one where it would finish first (ties to the
// lower group). Admission: with reject_late (the rules' and the placement's), a request
// predicted to finish (+ overhead) after arrival + SLO is rejected and leaves the clocks as
// they were.
//
// The simulator replays a trace through it; the server dispatches live requests through it, so
// both queue and reject by the same rule.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "plan/placement.hpp"

namespace pagoda::plan {

struct AdmissionRules {
    double default_slo_seconds = std::numeric_limits<double>::infinity();  // models without one
    bool reject_late = true;
    double overhead_seconds = 0.0;  // added to every predicted latency, besides the placement's
};

struct Admission {
    bool admitted = false;
    int32_t group = -1;       // the chosen group (-1: the model has no replica)
    double finish = 0.0;      // predicted finish on the chosen group, without the overhead
    double latency = 0.0;     // finish + overhead − arrival
    double slo = 0.0;         // the model's SLO
    double work = 0.0;        // stage-seconds the request adds to its group when admitted
};

class AdmissionControl {
public:
    // The placement must be valid (plan::validate); `rules` too.
    AdmissionControl(const Placement &placement, const AdmissionRules &rules);

    // Decides for a request for `model` arriving at `now` (seconds, non-decreasing from call to
    // call) and, when admitted, advances the chosen group's clocks.
    Admission admit(uint32_t model, double now);

    // All stage clocks back to 0 (idle groups).
    void reset();

    uint32_t model_count() const noexcept { return uint32_t(holders_.size()); }
    size_t group_count() const noexcept { return first_stage_.size(); }
    uint32_t stage_count(size_t group) const noexcept { return stage_count_[group]; }
    double slo(uint32_t model) const noexcept { return slo_[model]; }

private:
    struct Candidate {
        uint32_t group;
        uint32_t first_latency;  // index into latencies_
    };

    AdmissionRules rules_;
    std::vector<double> slo_;                      // per model
    std::vector<std::vector<Candidate>> holders_;  // per model: its replicas
    std::vector<double> latencies_;                // all replicas' stage latencies, flat
    std::vector<uint32_t> first_stage_;            // per group: index into clock_
    std::vector<uint32_t> stage_count_;            // per group
    std::vector<double> clock_;                    // when each stage becomes free
};

}  // namespace pagoda::plan
