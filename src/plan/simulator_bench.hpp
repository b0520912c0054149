// Timed cases for `pagoda bench plan` (tests/bench/bench_plan.cpp calls these): the simulator's
// speed on a day of traffic, and the placement search on an AlpaServe-sized problem. Each returns
// its sizes and wall seconds, so the bench prints one JSON object per case.
#pragma once

#include <cstdint>

namespace pagoda::plan {

struct SimulatorBenchCase {
    double hours = 24.0;          // simulated time
    double total_rate = 1000.0;   // requests per second over all models
    double cv = 2.0;
    int32_t models = 16;
    int32_t groups = 8;           // 4-stage pipelines; each holds half of the models
    uint64_t seed = 1;
};

struct SimulatorBenchResult {
    uint64_t requests = 0;
    double seconds = 0.0;         // wall time of generating and simulating the requests
    double slo_attainment = 0.0;  // so the work cannot be optimised away, and for the record
};

// `name`: "simulate". The workload is generated on the fly (a day at 1 000 req/s is 86.4 M
// requests, never held in memory).
SimulatorBenchResult bench_simulator(const SimulatorBenchCase &bench);

struct PlacementBenchCase {
    int32_t nodes = 1;
    int32_t devices_per_node = 8;
    int32_t models = 8;            // AlpaServe §3.2: Transformer-2.6B, 5.2 GB, 0.238 s
    double total_rate = 20.0;
    double cv = 3.0;
    double slo_scale = 5.0;
    bool fast_greedy = false;
    uint64_t seed = 1;
};

struct PlacementBenchResult {
    int64_t simulations = 0;
    int64_t greedy_runs = 0;
    uint64_t requests = 0;         // in the planning workload
    double slo_attainment = 0.0;   // of the chosen placement on the planning workload
    double seconds = 0.0;          // wall time of the search
};

// `name`: "placement": Algorithm 2 over the cluster with synthetic costs (stage latency
// α·D/(p·t), α = 1 + 0.05(p−1) + 0.3(t−1); 13 GB per device).
PlacementBenchResult bench_placement(const PlacementBenchCase &bench);

}  // namespace pagoda::plan
