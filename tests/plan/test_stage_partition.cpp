// Alpa-style stage partitioning: the DP against brute force over every layer split and every
// assignment of sub-mesh shapes that uses the whole mesh, on small meshes (1×4, 2×2, 2×4, 1×2)
// with random heterogeneous costs and memory limits, for both objectives, fixed stage counts and
// fixed tensor-parallel degrees.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "plan/stage_partition.hpp"

#include "plan_test_support.hpp"

using namespace pagoda::plan;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

StageCostTable random_table(const MeshShape &mesh, int64_t layers, unsigned seed, double memory) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    StageCostTable t;
    t.shapes = submesh_shapes(mesh);
    for (const SubmeshShape &s : t.shapes) {
        const double devices = s.device_count();
        std::vector<double> secs, bytes;
        for (int64_t i = 0; i < layers; ++i) {
            // Faster on more devices, with a random all-reduce penalty; layers differ.
            secs.push_back((0.5 + u(rng)) / devices + 0.1 * u(rng) * (devices - 1));
            bytes.push_back((1.0 + u(rng)) / devices);
        }
        t.layer_seconds.push_back(secs);
        t.layer_bytes.push_back(bytes);
        t.embedding_seconds.push_back(0.3 * u(rng));
        t.embedding_bytes.push_back(0.5 * u(rng) / devices);
        t.head_seconds.push_back(0.6 * u(rng));
        t.head_bytes.push_back(0.8 * u(rng) / devices);
        t.activation_bytes.push_back(0.2 * u(rng));
        t.send_seconds_intra_node.push_back(0.05 * u(rng));
        t.send_seconds_inter_node.push_back(0.3 * u(rng));
    }
    t.device_memory_bytes = memory;
    return t;
}

// A stage's time and memory computed straight from the table's definition.
struct Judged {
    double seconds;
    bool fits;
};
Judged judge(const StageCostTable &t, const MeshShape &mesh, size_t s, int64_t first, int64_t end) {
    const int64_t n = t.layer_count();
    double secs = 0, bytes = t.activation_bytes[s];
    for (int64_t i = first; i < end; ++i) {
        secs += t.layer_seconds[s][size_t(i)];
        bytes += t.layer_bytes[s][size_t(i)];
    }
    if (first == 0) {
        secs += t.embedding_seconds[s];
        bytes += t.embedding_bytes[s];
    }
    if (end == n) {
        secs += t.head_seconds[s];
        bytes += t.head_bytes[s];
    } else {
        const bool network = t.shapes[s].devices == mesh.devices_per_node && mesh.nodes > 1;
        secs += network ? t.send_seconds_inter_node[s] : t.send_seconds_intra_node[s];
    }
    return {secs, bytes <= t.device_memory_bytes};
}

// The best objective over every split into consecutive stages and every shape per stage whose
// device counts add up to the mesh; +∞ when nothing fits.
double brute_force(const StageCostTable &t, const MeshShape &mesh, const PartitionOptions &o) {
    const int64_t n = t.layer_count();
    const size_t shapes = t.shapes.size();
    double best = kInf;
    for (uint64_t cuts = 0; cuts < (uint64_t(1) << (n - 1)); ++cuts) {
        std::vector<std::pair<int64_t, int64_t>> ranges;
        int64_t start = 0;
        for (int64_t i = 1; i <= n; ++i)
            if (i == n || (cuts >> (i - 1)) & 1) {
                ranges.push_back({start, i});
                start = i;
            }
        if (o.stages > 0 && int64_t(ranges.size()) != o.stages) continue;
        std::vector<size_t> pick(ranges.size(), 0);
        std::function<void(size_t, int32_t, double, double)> assign = [&](size_t k, int32_t used,
                                                                           double sum, double top) {
            if (k == ranges.size()) {
                if (used != mesh.device_count()) return;
                const double v = o.objective == PartitionObjective::Latency
                                     ? sum
                                     : sum + double(o.micro_batches - 1) * top;
                best = std::min(best, v);
                return;
            }
            for (size_t s = 0; s < shapes; ++s) {
                const int32_t dev = t.shapes[s].device_count();
                if (o.tensor_parallel > 0 && dev != o.tensor_parallel) continue;
                if (used + dev > mesh.device_count()) continue;
                const Judged j = judge(t, mesh, s, ranges[k].first, ranges[k].second);
                if (!j.fits) continue;
                assign(k + 1, used + dev, sum + j.seconds, std::max(top, j.seconds));
            }
        };
        assign(0, 0, 0.0, 0.0);
    }
    return best;
}

void check_partition(const StagePartition &p, const StageCostTable &t, const MeshShape &mesh,
                     const PartitionOptions &o) {
    int64_t next = 0;
    int32_t devices = 0;
    for (const Stage &s : p.stages) {
        assert_int_equal(s.first_layer, next);
        assert_true(s.end_layer > s.first_layer);
        next = s.end_layer;
        devices += s.shape.device_count();
        assert_int_equal(s.tensor_parallel, s.shape.device_count());
        assert_true(s.memory_bytes <= t.device_memory_bytes);
        if (o.tensor_parallel > 0) assert_int_equal(s.tensor_parallel, o.tensor_parallel);
    }
    assert_int_equal(next, t.layer_count());
    assert_int_equal(devices, mesh.device_count());
    assert_true(p.stages.front().has_embedding && p.stages.back().has_head);
    if (o.stages > 0) assert_int_equal(p.stages.size(), o.stages);
    assert_true(std::fabs(partition_objective(p.stages, o) - p.objective_seconds) < 1e-12);
}

void test_matches_brute_force(void **) {
    const MeshShape meshes[] = {{1, 4}, {2, 2}, {2, 4}, {1, 2}, {1, 1}};
    int compared = 0, infeasible = 0;
    unsigned seed = 1;
    for (const MeshShape &mesh : meshes)
        for (int64_t layers = 1; layers <= 6; ++layers)
            for (int rep = 0; rep < 6; ++rep, ++seed) {
                // Memory from generous to tight, so some cases have nothing that fits.
                const double memory = 0.4 + 1.5 * double(rep);
                const StageCostTable t = random_table(mesh, layers, seed, memory);
                for (int variant = 0; variant < 5; ++variant) {
                    PartitionOptions o;
                    o.objective = variant % 2 == 0 ? PartitionObjective::Latency : PartitionObjective::Throughput;
                    o.micro_batches = variant == 1 ? 4 : (variant == 3 ? 2 : 1);
                    if (variant == 2) o.stages = int32_t(std::min<int64_t>(layers, mesh.device_count()));
                    if (variant == 4) {
                        o.micro_batches = 8;
                        o.tensor_parallel = mesh.device_count() >= 2 ? 2 : 1;
                    }
                    const double want = brute_force(t, mesh, o);
                    if (want == kInf) {
                        pagoda::test::expect_error(PAGODA_ERR_UNSUPPORTED, "fits",
                                                   [&] { partition_stages(t, mesh, o); });
                        ++infeasible;
                        continue;
                    }
                    const StagePartition p = partition_stages(t, mesh, o);
                    check_partition(p, t, mesh, o);
                    if (std::fabs(p.objective_seconds - want) > 1e-9 * want)
                        fail_msg("mesh %dx%d, %lld layers, seed %u, variant %d: DP %.12f, brute force %.12f",
                                 mesh.nodes, mesh.devices_per_node, (long long)layers, seed, variant,
                                 p.objective_seconds, want);
                    ++compared;
                }
            }
    print_message("compared %d partitions with brute force, %d cases had none that fits\n", compared, infeasible);
    // Both kinds of case were exercised.
    assert_true(compared > 500);
    assert_true(infeasible > 10);
}

// ε > 0 costs at most B·ε against the exact throughput optimum.
void test_epsilon_bound(void **) {
    const MeshShape mesh{2, 4};
    for (unsigned seed = 500; seed < 520; ++seed) {
        const StageCostTable t = random_table(mesh, 10, seed, 100.0);
        PartitionOptions o;
        o.objective = PartitionObjective::Throughput;
        o.micro_batches = 6;
        const StagePartition exact = partition_stages(t, mesh, o);
        o.epsilon_seconds = 0.02;
        const StagePartition thinned = partition_stages(t, mesh, o);
        assert_true(thinned.objective_seconds >= exact.objective_seconds - 1e-12);
        assert_true(thinned.objective_seconds <= exact.objective_seconds + 6 * 0.02 + 1e-12);
    }
}

void test_shapes(void **) {
    const std::vector<SubmeshShape> s = submesh_shapes({3, 4});
    const std::vector<SubmeshShape> want = {{1, 1}, {1, 2}, {1, 4}, {2, 4}, {3, 4}};
    assert_true(s == want);
    pagoda::test::expect_error(PAGODA_ERR_UNSUPPORTED, "power of two", [] { submesh_shapes({2, 6}); });
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "must be positive", [] { submesh_shapes({0, 8}); });
}

void test_bad_tables_and_options(void **) {
    const MeshShape mesh{1, 4};
    StageCostTable t = random_table(mesh, 4, 9, 100.0);
    PartitionOptions o;
    o.micro_batches = 0;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "micro_batches", [&] { partition_stages(t, mesh, o); });
    o.micro_batches = 1;
    o.stages = 5;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "stages is 5", [&] { partition_stages(t, mesh, o); });
    o.stages = 0;
    o.tensor_parallel = 3;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "tensor_parallel is 3",
                               [&] { partition_stages(t, mesh, o); });
    o.tensor_parallel = 0;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "not a sub-mesh shape",
                               [&] { partition_stages(t, MeshShape{1, 2}, o); });
    StageCostTable bad = t;
    bad.layer_seconds[1].pop_back();
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "layer_seconds[1] has 3 entries, want 4",
                               [&] { partition_stages(bad, mesh, o); });
    bad = t;
    bad.head_seconds[0] = -1;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "head_seconds[0]",
                               [&] { partition_stages(bad, mesh, o); });
    bad = t;
    bad.device_memory_bytes = 0;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "device_memory_bytes",
                               [&] { partition_stages(bad, mesh, o); });
    bad = t;
    bad.device_memory_bytes = 1e-3;
    pagoda::test::expect_error(PAGODA_ERR_UNSUPPORTED, "a stage of one layer needs at least",
                               [&] { partition_stages(bad, mesh, o); });
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_brute_force),
        cmocka_unit_test(test_epsilon_bound),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_bad_tables_and_options),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
