// A placement served (AlpaServe §4.3): model names with replicas on the placement's groups, and
// the controller that sends each request to the replica where it would finish first, or rejects
// it at arrival when it would miss its model's SLO. The rule is the simulator's
// (plan/admission.hpp), fed with each replica's stage latencies from the placement and the time
// since the routing began, so a trace replayed against the server queues and rejects as
// `pagoda simulate` predicts. Loop thread only (requests arrive there), except the counters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plan/admission.hpp"
#include "plan/placement.hpp"

namespace pagoda::server {

class PlacementRouting {
public:
    explicit PlacementRouting(plan::Placement placement);

    const plan::Placement &placement() const noexcept { return placement_; }
    // The model's index in the placement, or -1.
    int32_t model_index(const std::string &name) const;
    // Whether placement group `group` holds a replica of model `model`.
    bool holds(size_t group, uint32_t model) const;

    struct Decision {
        bool admitted = false;
        int32_t group = -1;     // where it goes (-1: the model has no replica)
        double latency = 0.0;   // predicted, seconds
        double slo = 0.0;
    };
    // A request for `model` arriving now.
    Decision admit(uint32_t model);

    // Requests rejected at arrival, per model.
    uint64_t rejected(uint32_t model) const { return rejected_[model].load(); }

private:
    plan::Placement placement_;
    plan::AdmissionControl control_;
    std::chrono::steady_clock::time_point origin_;
    std::unique_ptr<std::atomic<uint64_t>[]> rejected_;
};

}  // namespace pagoda::server
