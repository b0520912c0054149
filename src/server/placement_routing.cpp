#include "server/placement_routing.hpp"

#include <algorithm>

namespace pagoda::server {

PlacementRouting::PlacementRouting(plan::Placement placement)
    : placement_(std::move(placement)), control_(placement_, plan::AdmissionRules{}),
      origin_(std::chrono::steady_clock::now()),
      rejected_(std::make_unique<std::atomic<uint64_t>[]>(placement_.models.size())) {}

int32_t PlacementRouting::model_index(const std::string &name) const {
    for (size_t m = 0; m < placement_.models.size(); ++m)
        if (placement_.models[m].name == name) return int32_t(m);
    return -1;
}

bool PlacementRouting::holds(size_t group, uint32_t model) const {
    if (group >= placement_.groups.size()) return false;
    const auto &replicas = placement_.groups[group].replicas;
    return std::any_of(replicas.begin(), replicas.end(),
                       [&](const plan::Replica &r) { return r.model == model; });
}

PlacementRouting::Decision PlacementRouting::admit(uint32_t model) {
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
    const plan::Admission a = control_.admit(model, now);
    Decision d;
    d.admitted = a.admitted;
    d.group = a.group;
    d.latency = a.latency;
    d.slo = a.slo;
    if (!a.admitted) ++rejected_[model];
    return d;
}

}  // namespace pagoda::server
