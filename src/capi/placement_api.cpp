// plan.h, serving simulation: a multi-model placement (JSON) under Gamma traffic.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "pagoda/plan.h"
#include "plan/placement.hpp"
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

void require_finite_at_least(double value, double least, const char *field) {
    if (!(value >= least) || !std::isfinite(value))
        fail(PAGODA_ERR_INVALID_ARGUMENT, std::string("options->") + field + " is " +
                                              std::to_string(value) + ": want a finite number ≥ " +
                                              std::to_string(least));
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
        const pagoda_simulate_options_t o =
            pagoda::read_sized(options, default_simulate_options(), "options");
        require_finite_at_least(o.rate_per_model, 0.0, "rate_per_model");
        require_finite_at_least(o.total_rate, 0.0, "total_rate");
        require_finite_at_least(o.cv, 0.0, "cv");
        require_finite_at_least(o.slo_seconds, 0.0, "slo_seconds");
        require_finite_at_least(o.duration_seconds, 0.0, "duration_seconds");
        require_finite_at_least(o.overhead_seconds, 0.0, "overhead_seconds");

        const plan::Placement placement = plan::placement_from_json(placement_json, "placement");
        const size_t models = placement.models.size();
        const double rate = o.total_rate > 0.0
                                ? (models > 0 ? o.total_rate / double(models) : 0.0)
                                : o.rate_per_model;
        const std::vector<plan::ArrivalProcess> traffic(models, {rate, o.cv});
        plan::SimulationOptions simulation;
        simulation.default_slo_seconds =
            o.slo_seconds > 0.0 ? o.slo_seconds : std::numeric_limits<double>::infinity();
        simulation.reject_late = o.reject_late != 0;
        simulation.overhead_seconds = o.overhead_seconds;

        plan::GammaWorkload workload(traffic, o.duration_seconds, o.seed);
        plan::Simulator simulator(placement, simulation);
        const std::string text = plan::simulation_to_json(simulator.run(workload), placement);
        char *copy = static_cast<char *>(std::malloc(text.size() + 1));
        if (copy == nullptr) throw std::bad_alloc();
        std::memcpy(copy, text.c_str(), text.size() + 1);
        *result_json = copy;
        return PAGODA_OK;
    });
}

}  // extern "C"
