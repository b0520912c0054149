#include "plan/stage_partition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string shape_text(const SubmeshShape &s) {
    return "(" + std::to_string(s.nodes) + "," + std::to_string(s.devices) + ")";
}

std::string gib(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

bool power_of_two(int32_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The table's costs in the form the DP reads: prefix sums per shape, so that a stage's time and
// memory cost O(1).
class StageCoster {
public:
    StageCoster(const StageCostTable &t, const MeshShape &mesh, const std::vector<size_t> &usable)
        : table_(t), mesh_(mesh), usable_(usable), n_(t.layer_count()) {
        const size_t shapes = t.shapes.size();
        time_prefix_.assign(shapes, std::vector<double>(size_t(n_) + 1, 0.0));
        bytes_prefix_.assign(shapes, std::vector<double>(size_t(n_) + 1, 0.0));
        for (size_t s = 0; s < shapes; ++s)
            for (int64_t i = 0; i < n_; ++i) {
                time_prefix_[s][size_t(i) + 1] = time_prefix_[s][size_t(i)] + t.layer_seconds[s][size_t(i)];
                bytes_prefix_[s][size_t(i) + 1] = bytes_prefix_[s][size_t(i)] + t.layer_bytes[s][size_t(i)];
            }
    }

    int64_t layers() const { return n_; }
    const std::vector<size_t> &usable_shapes() const { return usable_; }
    int32_t devices(size_t s) const { return table_.shapes[s].device_count(); }

    // Compute part that only grows with `end`, so the DP may stop extending a stage once it
    // passes t_max.
    double growing_seconds(size_t s, int64_t first, int64_t end) const {
        return time_prefix_[s][size_t(end)] - time_prefix_[s][size_t(first)] +
               (first == 0 ? table_.embedding_seconds[s] : 0.0);
    }
    double seconds(size_t s, int64_t first, int64_t end) const {
        return growing_seconds(s, first, end) + (end == n_ ? table_.head_seconds[s] : send_seconds(s));
    }
    double send_seconds(size_t s) const {
        const bool crosses_nodes = table_.shapes[s].whole_nodes(mesh_) && mesh_.nodes > 1;
        return crosses_nodes ? table_.send_seconds_inter_node[s] : table_.send_seconds_intra_node[s];
    }
    double bytes(size_t s, int64_t first, int64_t end) const {
        return bytes_prefix_[s][size_t(end)] - bytes_prefix_[s][size_t(first)] +
               (first == 0 ? table_.embedding_bytes[s] : 0.0) +
               (end == n_ ? table_.head_bytes[s] : 0.0) + table_.activation_bytes[s];
    }
    bool fits(size_t s, int64_t first, int64_t end) const {
        return bytes(s, first, end) <= table_.device_memory_bytes;
    }
    Stage make_stage(size_t s, int64_t first, int64_t end) const {
        Stage st;
        st.first_layer = first;
        st.end_layer = end;
        st.shape = table_.shapes[s];
        st.tensor_parallel = st.shape.device_count();
        st.has_embedding = first == 0;
        st.has_head = end == n_;
        st.seconds = seconds(s, first, end);
        st.memory_bytes = bytes(s, first, end);
        return st;
    }

private:
    const StageCostTable &table_;
    MeshShape mesh_;
    std::vector<size_t> usable_;
    int64_t n_;
    std::vector<std::vector<double>> time_prefix_, bytes_prefix_;
};

// Alpa Eq. 3.3 as a forward DP: the least Σ t_i that places layers [0, k) on d devices as j
// stages, every stage ≤ t_max and within memory. With a free stage count, j stays 0.
class PartitionDp {
public:
    PartitionDp(const StageCoster &coster, int32_t device_count, int32_t fixed_stages)
        : c_(coster), n_(coster.layers()), d_(device_count), fixed_(fixed_stages),
          levels_(fixed_stages > 0 ? fixed_stages + 1 : 1) {
        const size_t states = size_t(levels_) * size_t(n_ + 1) * size_t(d_ + 1);
        total_.resize(states);
        from_layer_.resize(states);
        from_shape_.resize(states);
    }

    // The least Σ t_i under `t_max`, with its stages; an empty result when nothing is feasible.
    std::vector<Stage> solve(double t_max, double *sum_out) {
        std::fill(total_.begin(), total_.end(), kInf);
        total_[index(0, 0, 0)] = 0.0;
        for (int32_t j = 0; j < levels_; ++j)
            for (int64_t k = 0; k < n_; ++k)
                for (int32_t d = 0; d < d_; ++d) {
                    const double base = total_[index(j, k, d)];
                    if (base == kInf) continue;
                    if (fixed_ > 0 && j == fixed_) continue;
                    extend(j, k, d, base, t_max);
                }
        const int32_t last_level = fixed_ > 0 ? fixed_ : 0;
        const double best = total_[index(last_level, n_, d_)];
        if (best == kInf) return {};
        *sum_out = best;
        return backtrack(last_level);
    }

private:
    size_t index(int32_t j, int64_t k, int32_t d) const {
        return (size_t(j) * size_t(n_ + 1) + size_t(k)) * size_t(d_ + 1) + size_t(d);
    }

    void extend(int32_t j, int64_t k, int32_t d, double base, double t_max) {
        const int32_t next_j = fixed_ > 0 ? j + 1 : 0;
        // With a fixed count, leave at least one layer and one device for each later stage.
        const int64_t stages_after = fixed_ > 0 ? fixed_ - next_j : 0;
        for (size_t s : c_.usable_shapes()) {
            const int32_t nd = d + c_.devices(s);
            if (nd > d_ || d_ - nd < stages_after) continue;
            if (stages_after == 0 && fixed_ > 0 && nd != d_) continue;
            const int64_t last_end = n_ - stages_after;
            for (int64_t e = k + 1; e <= last_end; ++e) {
                if (c_.growing_seconds(s, k, e) > t_max || !c_.fits(s, k, e)) break;
                if (fixed_ > 0 && stages_after == 0 && e != n_) continue;
                const double t = c_.seconds(s, k, e);
                if (t > t_max) continue;
                const size_t to = index(next_j, e, nd);
                if (base + t < total_[to]) {
                    total_[to] = base + t;
                    from_layer_[to] = k;
                    from_shape_[to] = s;
                }
            }
        }
    }

    std::vector<Stage> backtrack(int32_t level) const {
        std::vector<Stage> stages;
        int64_t k = n_;
        int32_t d = d_, j = level;
        while (k > 0) {
            const size_t at = index(j, k, d);
            const int64_t first = from_layer_[at];
            const size_t s = from_shape_[at];
            stages.push_back(c_.make_stage(s, first, k));
            k = first;
            d -= c_.devices(s);
            if (fixed_ > 0) --j;
        }
        std::reverse(stages.begin(), stages.end());
        return stages;
    }

    const StageCoster &c_;
    int64_t n_;
    int32_t d_;
    int32_t fixed_;
    int32_t levels_;
    std::vector<double> total_;
    std::vector<int64_t> from_layer_;
    std::vector<size_t> from_shape_;
};

void check_row(const std::vector<double> &row, size_t want, const std::string &field) {
    if (row.size() != want)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "stage cost table: " + field + " has " +
                                                     std::to_string(row.size()) + " entries, want " +
                                                     std::to_string(want));
    for (size_t i = 0; i < row.size(); ++i)
        if (!(row[i] >= 0.0) || std::isinf(row[i]))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "stage cost table: " + field + "[" +
                                                         std::to_string(i) + "] is " +
                                                         std::to_string(row[i]) +
                                                         ", want a finite value >= 0");
}

StagePartition summarise(std::vector<Stage> stages, const PartitionOptions &options) {
    StagePartition p;
    p.stages = std::move(stages);
    for (const Stage &s : p.stages) {
        p.latency_seconds += s.seconds;
        p.max_stage_seconds = std::max(p.max_stage_seconds, s.seconds);
    }
    p.objective_seconds = partition_objective(p.stages, options);
    return p;
}

}  // namespace

std::vector<SubmeshShape> submesh_shapes(const MeshShape &mesh) {
    if (mesh.nodes <= 0 || mesh.devices_per_node <= 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "mesh " + std::to_string(mesh.nodes) + "x" + std::to_string(mesh.devices_per_node) +
                        ": nodes and devices per node must be positive");
    if (!power_of_two(mesh.devices_per_node))
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    "mesh " + std::to_string(mesh.nodes) + "x" + std::to_string(mesh.devices_per_node) +
                        ": devices per node must be a power of two for Alpa's sub-mesh shapes to tile it");
    std::vector<SubmeshShape> shapes;
    for (int32_t m = 1; m <= mesh.devices_per_node; m *= 2) shapes.push_back({1, m});
    for (int32_t n = 2; n <= mesh.nodes; ++n) shapes.push_back({n, mesh.devices_per_node});
    return shapes;
}

void validate(const StageCostTable &table) {
    const size_t shapes = table.shapes.size();
    if (shapes == 0) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "stage cost table: no shapes");
    if (table.layer_seconds.size() != shapes || table.layer_bytes.size() != shapes)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "stage cost table: layer_seconds and layer_bytes need one row per shape (" +
                        std::to_string(shapes) + ")");
    const size_t layers = table.layer_seconds.front().size();
    if (layers == 0) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "stage cost table: no layers");
    for (size_t s = 0; s < shapes; ++s) {
        const std::string at = "[" + std::to_string(s) + "]";
        check_row(table.layer_seconds[s], layers, "layer_seconds" + at);
        check_row(table.layer_bytes[s], layers, "layer_bytes" + at);
    }
    check_row(table.embedding_seconds, shapes, "embedding_seconds");
    check_row(table.embedding_bytes, shapes, "embedding_bytes");
    check_row(table.head_seconds, shapes, "head_seconds");
    check_row(table.head_bytes, shapes, "head_bytes");
    check_row(table.activation_bytes, shapes, "activation_bytes");
    check_row(table.send_seconds_intra_node, shapes, "send_seconds_intra_node");
    check_row(table.send_seconds_inter_node, shapes, "send_seconds_inter_node");
    if (!(table.device_memory_bytes > 0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "stage cost table: device_memory_bytes is " +
                                                     std::to_string(table.device_memory_bytes) +
                                                     ", want > 0");
}

double partition_objective(const std::vector<Stage> &stages, const PartitionOptions &options) {
    double sum = 0, top = 0;
    for (const Stage &s : stages) {
        sum += s.seconds;
        top = std::max(top, s.seconds);
    }
    if (options.objective == PartitionObjective::Latency) return sum;
    return sum + double(options.micro_batches - 1) * top;  // Alpa Eq. 3.2
}

StagePartition partition_stages(const StageCostTable &table, const MeshShape &mesh,
                                const PartitionOptions &options) {
    validate(table);
    const std::vector<SubmeshShape> allowed = submesh_shapes(mesh);
    if (options.micro_batches < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "micro_batches is " + std::to_string(options.micro_batches) + ", want >= 1");
    if (options.stages < 0 || options.tensor_parallel < 0 || !(options.epsilon_seconds >= 0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "stages, tensor_parallel and epsilon_seconds must be >= 0");
    const int64_t n = table.layer_count();
    if (options.stages > n || options.stages > mesh.device_count())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "stages is " + std::to_string(options.stages) + " but there are " +
                        std::to_string(n) + " layers and " + std::to_string(mesh.device_count()) +
                        " devices");

    std::vector<size_t> usable;
    for (size_t s = 0; s < table.shapes.size(); ++s) {
        const SubmeshShape &sh = table.shapes[s];
        if (std::find(allowed.begin(), allowed.end(), sh) == allowed.end())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "stage cost table: shape " + shape_text(sh) + " is not a sub-mesh shape of the " +
                            std::to_string(mesh.nodes) + "x" + std::to_string(mesh.devices_per_node) +
                            " mesh");
        if (options.tensor_parallel == 0 || sh.device_count() == options.tensor_parallel)
            usable.push_back(s);
    }
    if (usable.empty())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "tensor_parallel is " + std::to_string(options.tensor_parallel) +
                        " but no sub-mesh shape in the table has that many devices");

    const StageCoster coster(table, mesh, usable);
    PartitionDp dp(coster, mesh.device_count(), options.stages);

    // Unbounded: the least Σ t_i, the latency optimum and a bound on everything else.
    double least_sum = 0;
    std::vector<Stage> best_stages = dp.solve(kInf, &least_sum);
    if (best_stages.empty()) {
        // Say what the smallest stage needs, so the caller sees how far off the memory is.
        double smallest = kInf;
        SubmeshShape at{};
        for (size_t s : usable)
            for (int64_t k = 0; k < n; ++k)
                if (coster.bytes(s, k, k + 1) < smallest) {
                    smallest = coster.bytes(s, k, k + 1);
                    at = table.shapes[s];
                }
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    "no partition of " + std::to_string(n) + " layers over the " +
                        std::to_string(mesh.nodes) + "x" + std::to_string(mesh.devices_per_node) +
                        " mesh fits " + gib(table.device_memory_bytes) +
                        " per device (a stage of one layer needs at least " + gib(smallest) +
                        " per device, on sub-mesh " + shape_text(at) + ")");
    }
    if (options.objective == PartitionObjective::Latency || options.micro_batches == 1)
        return summarise(std::move(best_stages), options);

    // Throughput: enumerate the bottleneck t_max over the distinct stage times (Alpa Eq. 3.4).
    std::vector<double> candidates;
    for (size_t s : usable)
        for (int64_t k = 0; k < n; ++k)
            for (int64_t e = k + 1; e <= n && coster.fits(s, k, e); ++e)
                candidates.push_back(coster.seconds(s, k, e));
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

    // Feasibility only grows with t_max, so the smallest feasible bottleneck is a binary search.
    size_t lo = 0, hi = candidates.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        double sum = 0;
        if (!dp.solve(candidates[mid], &sum).empty()) hi = mid;
        else lo = mid + 1;
    }

    const double b1 = double(options.micro_batches - 1);
    double best = partition_objective(best_stages, options);
    double last_tried = -kInf;
    for (size_t i = lo; i < candidates.size(); ++i) {
        const double t_max = candidates[i];
        // Any layout whose bottleneck is t_max costs at least max(t_max, least Σ) + (B−1)·t_max.
        if (std::max(t_max, least_sum) + b1 * t_max >= best) break;
        if (t_max < last_tried + options.epsilon_seconds) continue;
        last_tried = t_max;
        double sum = 0;
        std::vector<Stage> stages = dp.solve(t_max, &sum);
        if (stages.empty()) continue;
        const double value = partition_objective(stages, options);
        if (value < best) {
            best = value;
            best_stages = std::move(stages);
        }
    }
    return summarise(std::move(best_stages), options);
}

}  // namespace pagoda::plan
