#include "plan/admission.hpp"

#include <algorithm>
#include <cmath>

namespace pagoda::plan {

AdmissionControl::AdmissionControl(const Placement &placement, const AdmissionRules &rules)
    : rules_(rules) {
    rules_.overhead_seconds += placement.overhead_seconds;
    rules_.reject_late = rules.reject_late && placement.reject_late;
    slo_.reserve(placement.models.size());
    for (const PlacedModel &model : placement.models)
        slo_.push_back(std::isfinite(model.slo_seconds) ? model.slo_seconds : rules.default_slo_seconds);
    holders_.resize(placement.models.size());
    uint32_t stages = 0;
    for (uint32_t g = 0; g < placement.groups.size(); ++g) {
        const PlacementGroup &group = placement.groups[g];
        first_stage_.push_back(stages);
        stage_count_.push_back(uint32_t(group.pipeline));
        stages += uint32_t(group.pipeline);
        for (const Replica &replica : group.replicas) {
            holders_[replica.model].push_back({g, uint32_t(latencies_.size())});
            latencies_.insert(latencies_.end(), replica.stage_seconds.begin(), replica.stage_seconds.end());
        }
    }
    clock_.assign(stages, 0.0);
}

void AdmissionControl::reset() { std::fill(clock_.begin(), clock_.end(), 0.0); }

Admission AdmissionControl::admit(uint32_t model, double now) {
    Admission a;
    a.slo = slo_[model];
    const Candidate *best = nullptr;
    double best_finish = std::numeric_limits<double>::infinity();
    for (const Candidate &candidate : holders_[model]) {
        const double *stage_clock = clock_.data() + first_stage_[candidate.group];
        const double *latency = latencies_.data() + candidate.first_latency;
        double t = now;
        for (uint32_t s = 0, n = stage_count_[candidate.group]; s < n; ++s)
            t = std::max(stage_clock[s], t) + latency[s];
        if (t < best_finish) {
            best_finish = t;
            best = &candidate;
        }
    }
    if (best == nullptr) return a;
    a.group = int32_t(best->group);
    a.finish = best_finish;
    a.latency = best_finish + rules_.overhead_seconds - now;
    a.admitted = !(rules_.reject_late && a.latency > a.slo);
    if (!a.admitted) return a;
    double *stage_clock = clock_.data() + first_stage_[best->group];
    const double *stage_latency = latencies_.data() + best->first_latency;
    double t = now;
    for (uint32_t s = 0, n = stage_count_[best->group]; s < n; ++s) {
        t = std::max(stage_clock[s], t) + stage_latency[s];
        stage_clock[s] = t;
        a.work += stage_latency[s];
    }
    return a;
}

}  // namespace pagoda::plan
