#include "plan/placement_search.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

void validate(const SearchOptions &options) {
    auto invalid = [](const std::string &what) {
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "placement search: " + what);
    };
    if (options.max_pipeline < 1)
        invalid("max_pipeline = " + std::to_string(options.max_pipeline) + " is not ≥ 1");
    if (options.max_tensor < 1)
        invalid("max_tensor = " + std::to_string(options.max_tensor) + " is not ≥ 1");
    if (options.beam_width < 1)
        invalid("beam_width = " + std::to_string(options.beam_width) + " is not ≥ 1");
    if (!(options.bucket_cut_ratio >= 1.0))
        invalid("bucket_cut_ratio = " + std::to_string(options.bucket_cut_ratio) + " is not ≥ 1");
    if (!(options.bucket_latency_ratio >= 1.0))
        invalid("bucket_latency_ratio = " + std::to_string(options.bucket_latency_ratio) +
                " is not ≥ 1");
    if (options.max_buckets < 1)
        invalid("max_buckets = " + std::to_string(options.max_buckets) + " is not ≥ 1");
    if (!(options.device_split_tolerance >= 1.0))
        invalid("device_split_tolerance = " + std::to_string(options.device_split_tolerance) +
                " is not ≥ 1");
    validate(options.simulation);
}

void validate(const ClusterShape &cluster) {
    if (cluster.nodes < 1 || cluster.devices_per_node < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "placement search: a cluster of " + std::to_string(cluster.nodes) + " × " +
                        std::to_string(cluster.devices_per_node) + " devices");
    if (!(cluster.device_memory_bytes > 0.0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "placement search: device_memory_bytes = " +
                        std::to_string(cluster.device_memory_bytes) + " is not > 0");
}

namespace {

// Candidates are ranked by attainment; equal attainments by lower mean latency, then by more
// replicas (AlpaServe's score: goodput − mean_latency/1e4 + replicas/1e6, as an exact order).
struct Score {
    double attainment = -1.0;
    double mean_latency = 0.0;
    size_t replicas = 0;

    bool better_than(const Score &other) const noexcept {
        if (attainment != other.attainment) return attainment > other.attainment;
        if (mean_latency != other.mean_latency) return mean_latency < other.mean_latency;
        return replicas > other.replicas;
    }
};

size_t replica_total(const Placement &placement) {
    size_t total = 0;
    for (const PlacementGroup &group : placement.groups) total += group.replicas.size();
    return total;
}

// The requests of `models` only.
Trace restrict_trace(const Trace &trace, std::span<const uint32_t> models, size_t model_count) {
    std::vector<char> keep(model_count, 0);
    for (uint32_t m : models) keep[m] = 1;
    Trace out;
    for (size_t i = 0; i < trace.size(); ++i)
        if (keep[trace.models[i]]) {
            out.times.push_back(trace.times[i]);
            out.models.push_back(trace.models[i]);
        }
    return out;
}

class Scorer {
public:
    Scorer(const Trace &trace, const SimulationOptions &options, SearchStats &stats)
        : trace_(trace), options_(options), stats_(stats) {}

    SimulationResult simulate(const Placement &placement) const {
        ++stats_.simulations;
        Simulator simulator(placement, options_);
        TraceWorkload source = trace_.source(uint32_t(placement.models.size()));
        return simulator.run(source);
    }

    static Score score_of(const Placement &placement, const SimulationResult &result) {
        return {result.slo_attainment, result.latency.mean, replica_total(placement)};
    }

private:
    const Trace &trace_;
    const SimulationOptions &options_;
    SearchStats &stats_;
};

// Per (candidate model, group): its cost on that group's configuration, or nothing.
using CostTable = std::vector<std::vector<std::optional<ReplicaCost>>>;

CostTable cost_table(const Placement &placement, std::span<const uint32_t> candidates,
                     const ReplicaCostFn &cost) {
    CostTable table(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c)
        for (const PlacementGroup &group : placement.groups) {
            std::optional<ReplicaCost> replica = cost(candidates[c], group.pipeline, group.tensor);
            if (replica) {
                const size_t stages = size_t(group.pipeline);
                if (replica->stage_seconds.size() != stages ||
                    (!replica->stage_bytes.empty() && replica->stage_bytes.size() != stages))
                    throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                                "placement search: the cost of model " +
                                    std::to_string(candidates[c]) + " on pipeline " +
                                    std::to_string(group.pipeline) + " × tensor " +
                                    std::to_string(group.tensor) + " has " +
                                    std::to_string(replica->stage_seconds.size()) +
                                    " stage latencies and " +
                                    std::to_string(replica->stage_bytes.size()) + " stage sizes");
            }
            table[c].push_back(std::move(replica));
        }
    return table;
}

bool holds(const PlacementGroup &group, uint32_t model) {
    for (const Replica &replica : group.replicas)
        if (replica.model == model) return true;
    return false;
}

// Whether every device of the group still has room for this replica's stage.
bool fits(const PlacementGroup &group, const ReplicaCost &cost, double memory) {
    for (size_t s = 0; s < cost.stage_bytes.size(); ++s)
        if (group.stage_bytes(s) + cost.stage_bytes[s] > memory) return false;
    return true;
}

void add_replica(PlacementGroup &group, uint32_t model, const ReplicaCost &cost) {
    group.replicas.push_back({model, cost.stage_seconds, cost.stage_bytes});
}

// A selection's identity for de-duplicating the beam: its sorted (group, model) pairs.
std::vector<uint64_t> selection_key(const Placement &placement) {
    std::vector<uint64_t> key;
    for (uint64_t g = 0; g < placement.groups.size(); ++g)
        for (const Replica &replica : placement.groups[g].replicas)
            key.push_back(g << 32 | replica.model);
    std::sort(key.begin(), key.end());
    return key;
}

struct Scored {
    Placement placement;
    Score score;
};

// The chosen placement with its score (the caller fills in the statistics).
SearchResult finish(Placement best, const Scorer &scorer) {
    SearchResult result;
    result.score = scorer.simulate(best);
    result.placement = std::move(best);
    return result;
}

SearchResult beam_selection(const Placement &start, std::span<const uint32_t> candidates,
                            const CostTable &costs, double memory, const Scorer &scorer,
                            const SearchOptions &options) {
    Scored best{start, Scorer::score_of(start, scorer.simulate(start))};
    std::vector<Scored> beam = {best};
    for (;;) {
        std::vector<Scored> next;
        std::set<std::vector<uint64_t>> seen;
        for (const Scored &selection : beam)
            for (size_t c = 0; c < candidates.size(); ++c)
                for (size_t g = 0; g < start.groups.size(); ++g) {
                    const std::optional<ReplicaCost> &cost = costs[c][g];
                    const PlacementGroup &group = selection.placement.groups[g];
                    if (!cost || holds(group, candidates[c]) || !fits(group, *cost, memory))
                        continue;
                    Placement extended = selection.placement;
                    add_replica(extended.groups[g], candidates[c], *cost);
                    if (options.beam_width > 1 && !seen.insert(selection_key(extended)).second)
                        continue;
                    const Score score = Scorer::score_of(extended, scorer.simulate(extended));
                    next.push_back({std::move(extended), score});
                }
        if (next.empty()) break;
        // Stable: among equal scores the earlier (lower model, then group) candidate stays first.
        std::stable_sort(next.begin(), next.end(), [](const Scored &a, const Scored &b) {
            return a.score.better_than(b.score);
        });
        if (next.size() > size_t(options.beam_width)) next.resize(size_t(options.beam_width));
        if (next.front().score.better_than(best.score)) best = next.front();
        beam = std::move(next);
    }
    return finish(std::move(best.placement), scorer);
}

// The fast heuristic: one simulation per round; the model with the most requests unserved within
// its SLO goes to the least-utilised group that can still take it.
SearchResult fast_selection(const Placement &start, std::span<const uint32_t> candidates,
                            const CostTable &costs, double memory, const Scorer &scorer) {
    Placement current = start;
    Placement best = start;
    Score best_score;
    for (;;) {
        const SimulationResult result = scorer.simulate(current);
        const Score score = Scorer::score_of(current, result);
        if (score.better_than(best_score)) {
            best = current;
            best_score = score;
        }
        std::vector<size_t> order(candidates.size());
        for (size_t c = 0; c < order.size(); ++c) order[c] = c;
        auto unserved = [&](size_t c) {
            const ModelOutcome &outcome = result.per_model[candidates[c]];
            return outcome.requests - outcome.within_slo;
        };
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return unserved(a) > unserved(b); });
        bool placed = false;
        for (size_t c : order) {
            std::optional<size_t> target;
            for (size_t g = 0; g < current.groups.size(); ++g) {
                const std::optional<ReplicaCost> &cost = costs[c][g];
                if (!cost || holds(current.groups[g], candidates[c]) ||
                    !fits(current.groups[g], *cost, memory))
                    continue;
                if (!target || result.group_utilisation[g] < result.group_utilisation[*target])
                    target = g;
            }
            if (target) {
                add_replica(current.groups[*target], candidates[c], *costs[c][*target]);
                placed = true;
                break;
            }
        }
        if (!placed) break;
    }
    return finish(std::move(best), scorer);
}

// ---- Algorithm 2 -----------------------------------------------------------------------------

bool is_power_of_two(int32_t x) { return x > 0 && (x & (x - 1)) == 0; }

// The tensor degrees a group of `size` devices may use: powers of two dividing it, within a node.
std::vector<int32_t> tensor_degrees(int32_t size, const ClusterShape &cluster,
                                    const SearchOptions &options) {
    std::vector<int32_t> out;
    for (int32_t t = 1; t <= size && t <= options.max_tensor && t <= cluster.devices_per_node;
         t *= 2)
        if (size % t == 0 && size / t <= options.max_pipeline) out.push_back(t);
    return out;
}

// Group sizes: powers of two up to a node, then whole nodes (AlpaServe: sizes above a node are
// multiples of it).
std::vector<int32_t> group_sizes(int32_t devices, const ClusterShape &cluster) {
    std::vector<int32_t> out;
    for (int32_t s = 1; s <= devices; ++s) {
        const bool in_node = s <= cluster.devices_per_node && is_power_of_two(s);
        const bool whole_nodes = s > cluster.devices_per_node && s % cluster.devices_per_node == 0;
        if (in_node || whole_nodes || s == cluster.devices_per_node) out.push_back(s);
    }
    return out;
}

struct GroupLayout {
    int32_t size, pipeline, tensor;
};

// Every way to cut `devices` devices into groups of one size and configuration, plus a remainder
// group that keeps the tensor degree if it can.
std::vector<std::vector<GroupLayout>> group_partitions(int32_t devices, const ClusterShape &cluster,
                                                       const SearchOptions &options) {
    std::vector<std::vector<GroupLayout>> out;
    for (int32_t size : group_sizes(devices, cluster))
        for (int32_t tensor : tensor_degrees(size, cluster, options)) {
            std::vector<GroupLayout> layout(size_t(devices / size),
                                            {size, size / tensor, tensor});
            const int32_t rest = devices % size;
            if (rest > 0) {
                int32_t rest_tensor = tensor;
                while (rest % rest_tensor != 0) rest_tensor /= 2;
                if (rest / rest_tensor > options.max_pipeline) continue;
                layout.push_back({rest, rest / rest_tensor, rest_tensor});
            }
            out.push_back(std::move(layout));
        }
    return out;
}

Placement empty_groups(const std::vector<PlacedModel> &models,
                       const std::vector<GroupLayout> &layout, int32_t first_device) {
    Placement placement;
    placement.models = models;
    int32_t device = first_device;
    for (const GroupLayout &shape : layout) {
        PlacementGroup group;
        group.pipeline = shape.pipeline;
        group.tensor = shape.tensor;
        for (int32_t d = 0; d < shape.size; ++d) group.devices.push_back(device++);
        placement.groups.push_back(std::move(group));
    }
    return placement;
}

// Splits of the models (sorted by latency) into at most max_buckets contiguous buckets whose
// latencies stay within bucket_latency_ratio. Cuts fall only between neighbours whose latencies
// differ by more than bucket_cut_ratio: splitting alike models gains nothing against the convoy
// effect and multiplies the search. When no split fits, the one at every too-large step.
std::vector<std::vector<std::vector<uint32_t>>> model_buckets(const std::vector<uint32_t> &sorted,
                                                              const std::vector<double> &latency,
                                                              const SearchOptions &options) {
    std::vector<std::vector<std::vector<uint32_t>>> out;
    std::vector<std::vector<uint32_t>> current;
    const double ratio = options.bucket_latency_ratio;
    auto may_cut_before = [&](size_t i) {
        return i == sorted.size() ||
               latency[sorted[i]] > options.bucket_cut_ratio * latency[sorted[i - 1]];
    };
    auto extend = [&](auto &self, size_t start) -> void {
        if (start == sorted.size()) {
            out.push_back(current);
            return;
        }
        if (current.size() == size_t(options.max_buckets)) return;
        for (size_t end = start + 1; end <= sorted.size(); ++end) {
            if (latency[sorted[end - 1]] > ratio * latency[sorted[start]]) break;
            if (!may_cut_before(end)) continue;
            current.emplace_back(sorted.begin() + long(start), sorted.begin() + long(end));
            self(self, end);
            current.pop_back();
        }
    };
    if (!sorted.empty()) extend(extend, 0);
    if (out.empty() && !sorted.empty()) {
        std::vector<std::vector<uint32_t>> forced(1);
        for (size_t i = 0; i < sorted.size(); ++i) {
            if (i > 0 && latency[sorted[i]] > ratio * latency[forced.back().front()])
                forced.emplace_back();
            forced.back().push_back(sorted[i]);
        }
        out.push_back(std::move(forced));
    }
    return out;
}

// Ways to give k buckets `devices` devices in multiples of `unit`, each at least one unit.
void compositions(int32_t units, size_t parts, std::vector<int32_t> &current,
                  std::vector<std::vector<int32_t>> &out) {
    if (parts == 1) {
        current.push_back(units);
        out.push_back(current);
        current.pop_back();
        return;
    }
    for (int32_t first = 1; first <= units - int32_t(parts) + 1; ++first) {
        current.push_back(first);
        compositions(units - first, parts - 1, current, out);
        current.pop_back();
    }
}

}  // namespace

SearchResult greedy_selection(const Placement &placement, std::span<const uint32_t> candidates,
                              const ReplicaCostFn &cost, double device_memory_bytes,
                              const Trace &workload, const SearchOptions &options) {
    validate(options);
    validate(placement);
    for (uint32_t m : candidates)
        if (m >= placement.models.size())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "placement search: candidate model " + std::to_string(m) +
                            " but the placement has " + std::to_string(placement.models.size()) +
                            " models");
    SearchStats stats;
    stats.greedy_runs = 1;
    const Trace requests = restrict_trace(workload, candidates, placement.models.size());
    const Scorer scorer(requests, options.simulation, stats);
    const CostTable costs = cost_table(placement, candidates, cost);
    SearchResult result =
        options.fast_greedy
            ? fast_selection(placement, candidates, costs, device_memory_bytes, scorer)
            : beam_selection(placement, candidates, costs, device_memory_bytes, scorer, options);
    result.stats = stats;
    return result;
}

SearchResult search_placement(const std::vector<PlacedModel> &models, const ClusterShape &cluster,
                              const ReplicaCostFn &cost, const Trace &workload,
                              const SearchOptions &options) {
    validate(options);
    validate(cluster);
    const uint32_t model_count = uint32_t(models.size());
    for (size_t i = 0; i < workload.size(); ++i)
        if (workload.models[i] >= model_count)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "placement search: workload request [" + std::to_string(i) +
                            "] asks for model " + std::to_string(workload.models[i]) +
                            " but there are " + std::to_string(model_count) + " models");
    const int32_t devices = cluster.device_count();

    // Reference latency: Σ stage seconds on the smallest configuration that runs the model.
    std::vector<double> reference(model_count, 0.0);
    std::vector<uint32_t> placeable;
    for (uint32_t m = 0; m < model_count; ++m) {
        bool found = false;
        for (int32_t size : group_sizes(devices, cluster)) {
            for (int32_t tensor : tensor_degrees(size, cluster, options)) {
                const std::optional<ReplicaCost> replica = cost(m, size / tensor, tensor);
                if (!replica) continue;
                for (double s : replica->stage_seconds) reference[m] += s;
                found = true;
                break;
            }
            if (found) break;
        }
        if (found) placeable.push_back(m);
    }
    std::stable_sort(placeable.begin(), placeable.end(),
                     [&](uint32_t a, uint32_t b) { return reference[a] < reference[b]; });

    // Load per model: its share of the requests × its latency.
    std::vector<double> load(model_count, 0.0);
    for (uint32_t m : workload.models) load[m] += reference[m];

    SearchStats stats;
    std::optional<SearchResult> best;
    Score best_score;
    // Best solution of a bucket (its index in the bucketing's sorted model list and device count)
    // placed from device 0; shifted when used elsewhere.
    std::map<std::pair<std::vector<uint32_t>, int32_t>, Placement> solved;

    for (const auto &buckets : model_buckets(placeable, reference, options)) {
        const size_t k = buckets.size();
        if (k > size_t(devices)) continue;
        const int32_t unit = cluster.nodes >= int32_t(k) && cluster.nodes > 1
                                 ? cluster.devices_per_node
                                 : 1;
        std::vector<std::vector<int32_t>> splits;
        std::vector<int32_t> scratch;
        compositions(devices / unit, k, scratch, splits);

        // AlpaServe's pruning: device shares near load shares. Keep the closest if none is near.
        double total_load = 0.0;
        std::vector<double> bucket_load(k, 0.0);
        for (size_t b = 0; b < k; ++b)
            for (uint32_t m : buckets[b]) bucket_load[b] += load[m];
        for (double l : bucket_load) total_load += l;
        auto imbalance = [&](const std::vector<int32_t> &split) {
            double worst = 1.0;
            for (size_t b = 0; b < k; ++b) {
                const double device_share = double(split[b]) * unit / devices;
                const double load_share = total_load > 0 ? bucket_load[b] / total_load : 1.0 / k;
                if (load_share <= 0.0) return std::numeric_limits<double>::infinity();
                worst = std::max(worst, std::max(device_share / load_share,
                                                 load_share / device_share));
            }
            return worst;
        };
        std::vector<std::vector<int32_t>> kept;
        for (const auto &split : splits)
            if (k == 1 || imbalance(split) <= options.device_split_tolerance) kept.push_back(split);
        if (kept.empty() && !splits.empty())
            kept.push_back(*std::min_element(
                splits.begin(), splits.end(),
                [&](const auto &a, const auto &b) { return imbalance(a) < imbalance(b); }));

        for (const auto &split : kept) {
            Placement combined;
            combined.models = models;
            int32_t first_device = 0;
            for (size_t b = 0; b < k; ++b) {
                const int32_t bucket_devices = split[b] * unit;
                auto key = std::make_pair(buckets[b], bucket_devices);
                auto found = solved.find(key);
                if (found == solved.end()) {
                    std::optional<SearchResult> bucket_best;
                    Score bucket_score;
                    for (const auto &layout : group_partitions(bucket_devices, cluster, options)) {
                        SearchResult candidate =
                            greedy_selection(empty_groups(models, layout, 0), buckets[b], cost,
                                             cluster.device_memory_bytes, workload, options);
                        stats.simulations += candidate.stats.simulations;
                        stats.greedy_runs += 1;
                        const Score score =
                            Scorer::score_of(candidate.placement, candidate.score);
                        if (!bucket_best || score.better_than(bucket_score)) {
                            bucket_score = score;
                            bucket_best = std::move(candidate);
                        }
                    }
                    found = solved.emplace(key, bucket_best ? bucket_best->placement
                                                            : Placement{models, {}})
                                .first;
                }
                for (PlacementGroup group : found->second.groups) {
                    for (int32_t &device : group.devices) device += first_device;
                    combined.groups.push_back(std::move(group));
                }
                first_device += bucket_devices;
            }
            const Scorer scorer(workload, options.simulation, stats);
            SimulationResult result = scorer.simulate(combined);
            const Score score = Scorer::score_of(combined, result);
            if (!best || score.better_than(best_score)) {
                best_score = score;
                best = SearchResult{std::move(combined), std::move(result), {}};
            }
        }
    }
    if (!best) {  // nothing placeable: every request is rejected
        Placement empty{models, {}};
        const Scorer scorer(workload, options.simulation, stats);
        best = SearchResult{empty, scorer.simulate(empty), {}};
    }
    best->stats = stats;
    return *best;
}

Trace planning_workload(std::span<const ArrivalProcess> per_model, uint64_t seed) {
    double total_rate = 0.0;
    for (const ArrivalProcess &process : per_model) total_rate += process.rate;
    const double duration = total_rate > 0.0 ? std::max(100.0, 30000.0 / total_rate) : 100.0;
    GammaWorkload workload(per_model, duration, seed);
    return record(workload);
}

}  // namespace pagoda::plan
