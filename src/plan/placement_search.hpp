// AlpaServe's placement search (§4.2): which groups to cut the cluster into, how each group runs
// its models (pipeline stages × tensor degree), and which models each group holds, chosen to
// maximise SLO attainment on a known workload, as measured by the simulator.
//
//   Algorithm 1 (greedy_selection): start from empty groups and repeatedly add the replica
//   (model, group) that most improves simulated attainment, while the group's devices have memory
//   for it; a beam keeps the best k selections. The fast variant simulates once per round and puts
//   the model with the most unserved requests on the least-utilised group that can take it.
//
//   Algorithm 2 (search_placement): split the models into buckets of similar latency (so that
//   short requests do not queue behind long ones: the convoy effect), split the devices between
//   the buckets, and per bucket try every group size (all groups alike except a remainder group)
//   and parallel configuration, running Algorithm 1 on each; keep the best.
//
// What a model costs on a configuration comes from a function (ReplicaCostFn), so tests can give
// synthetic latencies and real plans can take them from the stage partitioner
// (placement_from_partitioner.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plan/placement.hpp"
#include "plan/simulator.hpp"
#include "plan/workload.hpp"

namespace pagoda::plan {

// One replica's cost on a (pipeline, tensor) configuration: per stage, the latency of one request
// and the bytes each of the stage's devices holds.
struct ReplicaCost {
    std::vector<double> stage_seconds;
    std::vector<double> stage_bytes;
};

// The cost of `model` (an index into the search's models) split into `pipeline` stages of `tensor`
// devices each, or nullopt when it cannot run that way (too few layers, a shard too big).
using ReplicaCostFn =
    std::function<std::optional<ReplicaCost>(uint32_t model, int32_t pipeline, int32_t tensor)>;

struct ClusterShape {
    int32_t nodes = 1;
    int32_t devices_per_node = 1;
    double device_memory_bytes = 0;  // usable for weights (AlpaServe: ~13 GB of a 16 GB V100)
    int32_t device_count() const noexcept { return nodes * devices_per_node; }
};

struct SearchOptions {
    int32_t max_pipeline = 8;  // AlpaServe's caps
    int32_t max_tensor = 4;    // and never more than a node's devices
    int32_t beam_width = 1;    // Algorithm 1's k (the paper's default)
    bool fast_greedy = false;  // the one-simulation-per-round heuristic
    // Models whose reference latency (Σ stage seconds on the smallest configuration that runs
    // them) differs by more than this factor go to different buckets.
    double bucket_latency_ratio = 2.0;
    // Buckets are cut only between models whose latencies differ by more than this factor.
    double bucket_cut_ratio = 1.2;
    int32_t max_buckets = 3;
    // A device split between buckets is tried only when every bucket's share of devices is within
    // this factor of its share of the load (Σ rate × reference latency); AlpaServe's pruning.
    double device_split_tolerance = 2.0;
    SimulationOptions simulation;  // SLOs and admission used to score candidates
};

// Throws Error(INVALID_ARGUMENT) naming the field.
void validate(const SearchOptions &options);
void validate(const ClusterShape &cluster);

struct SearchStats {
    int64_t simulations = 0;       // simulator runs (each over the whole relevant trace)
    int64_t greedy_runs = 0;       // Algorithm 1 invocations
};

struct SearchResult {
    Placement placement;
    SimulationResult score;  // the placement on the whole workload
    SearchStats stats;
};

// Algorithm 1 on fixed groups: `placement` gives the models (with their SLOs) and the groups
// (devices and configuration; replicas already there are kept); `candidates` limits which models
// may get replicas. The returned placement is the best seen, with its score on `workload`.
SearchResult greedy_selection(const Placement &placement, std::span<const uint32_t> candidates,
                              const ReplicaCostFn &cost, double device_memory_bytes,
                              const Trace &workload, const SearchOptions &options);

// Algorithm 2 over the whole cluster. `models` gives names and SLOs (an infinite SLO takes
// options.simulation.default_slo_seconds); `workload` the requests (model ids index `models`).
// Throws Error(INVALID_ARGUMENT) for bad options or a workload naming an unknown model.
SearchResult search_placement(const std::vector<PlacedModel> &models, const ClusterShape &cluster,
                              const ReplicaCostFn &cost, const Trace &workload,
                              const SearchOptions &options);

// AlpaServe's planning workload: each model's Gamma process for max(100 s, 30 000 / total rate)
// seconds, so that a search scores every candidate on about 30 000 requests.
Trace planning_workload(std::span<const ArrivalProcess> per_model, uint64_t seed);

}  // namespace pagoda::plan
