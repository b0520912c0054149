#include "plan/simulator_bench.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "plan/placement_search.hpp"
#include "plan/simulator.hpp"
#include "plan/workload.hpp"

namespace pagoda::plan {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SimulatorBenchResult bench_simulator(const SimulatorBenchCase &bench) {
    if (bench.models < 2 || bench.groups < 1 || !(bench.hours > 0) || !(bench.total_rate > 0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "simulator bench: needs ≥ 2 models, ≥ 1 group, and positive hours and rate");
    // Each 4-stage group holds half of the models (alternating halves), so every model has
    // groups/2 replicas or more and dispatch has a choice. A request takes 20 ms on one device;
    // per stage 1.1·20/4 ms; 8 groups serve ~1 450 req/s, so 1 000 req/s keeps them busy.
    Placement placement;
    for (int32_t m = 0; m < bench.models; ++m)
        placement.models.push_back({"model-" + std::to_string(m), 0.1});
    int32_t device = 0;
    for (int32_t g = 0; g < bench.groups; ++g) {
        PlacementGroup group;
        group.pipeline = 4;
        for (int32_t d = 0; d < 4; ++d) group.devices.push_back(device++);
        for (int32_t m = g % 2; m < bench.models; m += 2)
            group.replicas.push_back({uint32_t(m), std::vector<double>(4, 1.1 * 0.020 / 4), {}});
        if (bench.groups == 1)
            for (int32_t m = 1; m < bench.models; m += 2)
                group.replicas.push_back({uint32_t(m), std::vector<double>(4, 1.1 * 0.020 / 4), {}});
        placement.groups.push_back(std::move(group));
    }
    const std::vector<ArrivalProcess> traffic(size_t(bench.models),
                                              {bench.total_rate / bench.models, bench.cv});

    const auto start = std::chrono::steady_clock::now();
    GammaWorkload workload(traffic, bench.hours * 3600.0, bench.seed);
    Simulator simulator(placement, {});
    const SimulationResult result = simulator.run(workload);
    SimulatorBenchResult out;
    out.seconds = seconds_since(start);
    out.requests = result.requests;
    out.slo_attainment = result.slo_attainment;
    return out;
}

PlacementBenchResult bench_placement(const PlacementBenchCase &bench) {
    constexpr double kSeconds = 0.238, kBytes = 5.2e9;
    const ReplicaCostFn cost = [](uint32_t, int32_t pipeline,
                                  int32_t tensor) -> std::optional<ReplicaCost> {
        const double devices = double(pipeline) * tensor;
        const double alpha = 1.0 + 0.05 * (pipeline - 1) + 0.3 * (tensor - 1);
        return ReplicaCost{std::vector<double>(size_t(pipeline), alpha * kSeconds / devices),
                           std::vector<double>(size_t(pipeline), kBytes / devices)};
    };
    std::vector<PlacedModel> models;
    for (int32_t m = 0; m < bench.models; ++m)
        models.push_back({"model-" + std::to_string(m), bench.slo_scale * kSeconds});
    const std::vector<ArrivalProcess> traffic(size_t(bench.models),
                                              {bench.total_rate / bench.models, bench.cv});
    const Trace trace = planning_workload(traffic, bench.seed);
    SearchOptions options;
    options.fast_greedy = bench.fast_greedy;

    const auto start = std::chrono::steady_clock::now();
    const SearchResult result = search_placement(
        models, {bench.nodes, bench.devices_per_node, 13e9}, cost, trace, options);
    PlacementBenchResult out;
    out.seconds = seconds_since(start);
    out.simulations = result.stats.simulations;
    out.greedy_runs = result.stats.greedy_runs;
    out.requests = trace.size();
    out.slo_attainment = result.score.slo_attainment;
    return out;
}

}  // namespace pagoda::plan
