// The cost model: the Eq. 9 least-squares fit recovers known coefficients, the roofline and
// link formulas give the numbers worked out by hand, the stage table follows the model, and cost
// files round-trip and reject malformed content with messages naming the field.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "plan/context_fit.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_spec.hpp"
#include "plan/measured_costs.hpp"

#include "plan_test_support.hpp"

using namespace pagoda::plan;
using pagoda::test::expect_error;

namespace {

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// Llama-2-7B's shape.
ModelShape llama7b() {
    ModelShape s;
    s.hidden = 4096;
    s.intermediate = 11008;
    s.layers = 32;
    s.heads = 32;
    s.kv_heads = 32;
    s.head_dim = 128;
    s.vocab = 32000;
    return s;
}

void test_fit_recovers_coefficients(void **) {
    const ContextFit truth{0, 0, 5e-7, 4e-9};
    std::vector<ContextSample> exact, noisy;
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0.0, 0.01);
    for (int64_t l = 64; l <= 1024; l += 64)
        for (int64_t c = 64; c <= 1024; c += 64) {
            const double y = truth(l, c);
            exact.push_back({l, c, y});
            noisy.push_back({l, c, y * (1.0 + noise(rng))});
        }
    const ContextFit f = fit_context_term(exact);
    assert_true(f.a0 == 0 && f.a1 == 0);
    assert_true(close(f.a2, truth.a2, 1e-6) && close(f.a3, truth.a3, 1e-6));
    assert_true(context_fit_error(f, exact) < 1e-9);
    // 1 % noise: the fit's relative error is about that, well under TeraPipe's 2 %.
    const ContextFit g = fit_context_term(noisy);
    const double err = context_fit_error(g, noisy);
    assert_true(err > 0.002 && err < 0.02);
    assert_true(close(g.a3, truth.a3, 0.05));
    // One row of the grid (a single c) still separates the two terms.
    std::vector<ContextSample> row;
    for (int64_t l = 64; l <= 1024; l += 64) row.push_back({l, 512, truth(l, 512)});
    const ContextFit h = fit_context_term(row);
    assert_true(close(h.a2, truth.a2, 1e-6) && close(h.a3, truth.a3, 1e-6));

    // Overheads whose free least-squares fit has a2 < 0 (as noise on a loaded machine gave):
    // the fit keeps both terms non-negative, so no slice is predicted cheaper for its context.
    std::vector<ContextSample> bent;
    for (int64_t l = 256; l <= 2048; l += 256)
        for (int64_t c = 256; c <= 2048; c += 256) bent.push_back({l, c, 1.2e-7 * double(l * c) - 1e-5 * double(c)});
    const ContextFit b = fit_context_term(bent);
    assert_true(b.a2 >= 0 && b.a3 > 0);
    assert_true(b(32, 2016) >= 0);

    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "1 token count(s)", [] {
        fit_context_term({{8, 1, 1.0}, {8, 2, 2.0}, {8, 3, 3.0}});
    });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "0 token count(s)", [] { fit_context_term({}); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "context 0", [] {
        fit_context_term({{1, 0, 0.0}, {2, 5, 2.0}, {3, 5, 3.0}});
    });
}

void test_roofline_numbers(void **) {
    const DeviceSpec h100 = device_preset("h100");
    assert_true(h100.peak_flops == 989e12 && h100.memory_bandwidth == 3.35e12 && h100.devices_per_node == 8);
    const CostModel m(llama7b(), h100);
    // 7B layer: 4·4096² (attention) + 3·4096·11008 (FFN) + 2·4096 (norms) = 202,383,360 parameters.
    assert_true(close(llama7b().layer_parameters(), 202383360.0, 1e-12));
    // Prefill of 2048 tokens: compute-bound; 2·2048·(202,375,168) + 4·2048·(0 + 2049/2)·4096 FLOPs.
    const double flops = 2.0 * 2048 * 202375168.0 + 4.0 * 2048 * (2049.0 / 2) * 4096;
    assert_true(close(m.layer_flops(2048, 0), flops, 1e-12));
    assert_true(close(m.layer_seconds(2048, 0, 1), flops / 989e12 + h100.layer_overhead, 1e-9));
    // Decode of one token: bandwidth-bound on the weights (2 bytes each).
    const double decode = m.layer_seconds(1, 0, 1);
    assert_true(decode > 202383360.0 * 2 / 3.35e12);
    assert_true(decode < 1.01 * (m.layer_traffic_bytes(1, 0) / 3.35e12) + h100.layer_overhead);
    // Ring all-reduce over 8 GPUs of 16 MiB: 2·7/8·bytes/450e9 + 14 latencies.
    const double bytes = 16.0 * 1024 * 1024;
    assert_true(close(m.all_reduce_seconds(bytes, 8, false), 14.0 / 8 * bytes / 450e9 + 14 * 5e-6, 1e-12));
    assert_true(m.all_reduce_seconds(bytes, 1, false) == 0.0);
    assert_true(m.all_reduce_seconds(bytes, 16, true) > m.all_reduce_seconds(bytes, 16, false));
    // Tensor parallelism: compute splits, all-reduces are added.
    const double t1 = m.layer_seconds(2048, 0, 1), t8 = m.layer_seconds(2048, 0, 8);
    assert_true(t8 < t1 / 2 && t8 > t1 / 8);
    assert_true(close(t8, (flops / 8) / 989e12 + 20e-6 + 2 * m.all_reduce_seconds(2048.0 * 4096 * 2, 8, false), 1e-9));
    // Context makes a slice dearer (attention over the prefix).
    assert_true(m.layer_seconds(512, 4096, 1) > m.layer_seconds(512, 0, 1));
    // KV: 2 (K and V) · 32 heads · 128 · 2 bytes = 16 KiB per token per layer.
    assert_true(m.kv_bytes_per_token_per_layer() == 16384.0);
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "tensor-parallel degree 0", [&] { m.layer_seconds(1, 0, 0); });
    expect_error(PAGODA_ERR_NOT_FOUND, "known: h100, cpu", [] { device_preset("tpu"); });
    DeviceSpec bad = h100;
    bad.memory_bandwidth = 0;
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "memory_bandwidth", [&] { CostModel(llama7b(), bad); });
}

void test_stage_table(void **) {
    const CostModel m(llama7b(), device_preset("h100"));
    ServingWorkload w;
    w.tokens = 2048;
    w.kv_tokens = 100000;
    const StageCostTable t = make_stage_cost_table(m, {2, 8}, w);
    assert_int_equal(t.shapes.size(), 5);  // (1,1) (1,2) (1,4) (1,8) (2,8)
    validate(t);
    assert_int_equal(t.layer_count(), 32);
    // Per-device layer memory: weights / t + KV / min(t, kv_heads).
    const double want = m.layer_weight_bytes() / 4 + 100000.0 * 16384 / 4;
    assert_true(close(t.layer_bytes[2][0], want, 1e-12));
    assert_true(t.layer_seconds[4][0] > 0 && t.send_seconds_inter_node[0] > t.send_seconds_intra_node[0]);
    w.tokens = 0;
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "tokens is 0", [&] { make_stage_cost_table(m, {1, 8}, w); });
}

MeasuredLayerCosts sample_costs() {
    MeasuredLayerCosts c;
    c.backend = "cpu";
    c.device = "cpu:0 test";
    c.dtype = "f32";
    c.shape = llama7b();
    c.device_spec = device_preset("cpu");
    c.granularity = 8;
    c.no_context_seconds = {1.0, 1.5, 2.0, 2.5};
    c.fit = {0.1, 0.01, 0.001, 0.0001};
    c.context_fit_error = 0.015;
    c.total_fit_error = 0.01;
    c.fit_samples = 10;
    c.holdout_samples = 5;
    return c;
}

std::string temp_path(const char *name) {
    return std::string(P_tmpdir) + "/pagoda-plan-test-" + std::to_string(getpid()) + "-" + name;
}

void test_measured_costs(void **) {
    const MeasuredLayerCosts c = sample_costs();
    // Grid points, interpolation between them, the flat region below, extrapolation above.
    assert_true(close(c.seconds(16, 0), 1.5 + 0.1 + 0.16, 1e-12));
    assert_true(close(c.seconds(12, 0), 1.25 + 0.1 + 0.12, 1e-12));
    assert_true(close(c.seconds(4, 0), 1.0 + 0.1 + 0.04, 1e-12));
    assert_true(close(c.seconds(40, 0), 3.0 + 0.1 + 0.4, 1e-12));
    assert_true(close(c.seconds(8, 100), 1.0 + 0.1 + 0.08 + 0.1 + 0.0001 * 800, 1e-12));
    const CostModel m(c);
    assert_true(m.measured());
    assert_true(close(m.layer_seconds(16, 0, 1), c.seconds(16, 0), 1e-12));
    assert_true(m.layer_seconds(16, 0, 2) > c.seconds(16, 0) / 2);

    const std::string path = temp_path("costs.json");
    std::remove(path.c_str());
    save_measured_costs(path, c);
    MeasuredLayerCosts other = c;
    other.device = "cpu:1 test";
    save_measured_costs(path, other);
    MeasuredLayerCosts changed = c;
    changed.fit.a0 = 0.5;
    save_measured_costs(path, changed);  // replaces the first entry
    const std::vector<MeasuredLayerCosts> all = read_cost_file(path);
    assert_int_equal(all.size(), 2);
    const MeasuredLayerCosts back = find_measured_costs(path, c.shape, "cpu", "cpu:0 test");
    assert_true(back.fit.a0 == 0.5 && back.fit.a3 == c.fit.a3);
    assert_true(back.no_context_seconds == c.no_context_seconds && back.shape == c.shape);
    assert_true(back.device_spec.peak_flops == c.device_spec.peak_flops);
    ModelShape absent = c.shape;
    absent.hidden = 8;
    expect_error(PAGODA_ERR_NOT_FOUND, "the file holds: cpu / cpu:0 test",
                 [&] { find_measured_costs(path, absent); });

    auto write = [&](const std::string &text) {
        std::ofstream(path, std::ios::trunc) << text;
    };
    write("{not json");
    expect_error(PAGODA_ERR_FORMAT, "not valid JSON", [&] { read_cost_file(path); });
    write(R"({"format":"pagoda-costs","version":2,"entries":[]})");
    expect_error(PAGODA_ERR_FORMAT, "version 2", [&] { read_cost_file(path); });
    write(R"({"format":"pagoda-costs","version":1,"entries":[{"backend":"cpu"}]})");
    expect_error(PAGODA_ERR_FORMAT, "entries[0]: missing \"device\"", [&] { read_cost_file(path); });
    write(R"({"format":"other","version":1,"entries":[]})");
    expect_error(PAGODA_ERR_FORMAT, "\"format\" is not", [&] { read_cost_file(path); });
    std::remove(path.c_str());
    expect_error(PAGODA_ERR_IO, "cannot read the cost file", [&] { read_cost_file(path); });
}

// A generation's steps and their summed table: the prompt once, then one token a step after
// the tokens before it; the measured model charges no analytic embedding or head on one device
// (the forward passes it was timed on held them).
void test_generation_steps(void **) {
    const std::vector<ServingWorkload> steps = request_steps(8, 3);
    assert_int_equal(steps.size(), 3);
    assert_true(steps[0].tokens == 8 && steps[0].context == 0 && steps[0].kv_tokens == 11);
    assert_true(steps[1].tokens == 1 && steps[1].context == 8 && steps[2].context == 9);
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "output_tokens 0", [] { request_steps(8, 0); });

    const CostModel m(sample_costs());
    assert_true(m.head_seconds(1, 1) == 0.0 && m.embedding_seconds(8, 1) == 0.0);
    assert_true(m.head_seconds(1, 2) > 0.0);  // the logits' gather stays
    const MeshShape mesh{1, 2};
    const StageCostTable sum = make_stage_cost_table(m, mesh, steps);
    for (size_t s = 0; s < sum.shapes.size(); ++s) {
        const int32_t tp = sum.shapes[s].device_count();
        double want = 0;
        for (const ServingWorkload &w : steps) want += m.layer_seconds(w.tokens, w.context, tp);
        assert_true(close(sum.layer_seconds[s][0], want, 1e-12));
    }
    const StageCostTable first = make_stage_cost_table(m, mesh, steps[0]);
    assert_true(sum.layer_bytes[0][0] == first.layer_bytes[0][0]);  // every step reserves the same KV
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "no steps",
                 [&] { make_stage_cost_table(m, mesh, std::vector<ServingWorkload>{}); });
}

// A tensor-parallel group timed on its devices: its degree keeps its own entry in the file, the
// one-device lookups skip it, and the cost model takes its times as they are (all-reduces,
// embedding and head included) while other degrees, and groups across nodes, stay modelled.
void test_measured_groups(void **) {
    const MeasuredLayerCosts one = sample_costs();
    MeasuredLayerCosts pair = one;
    pair.device = "cpu:0-1 test, tp=2";
    pair.tensor_parallel = 2;
    pair.no_context_seconds = {0.7, 1.0, 1.3, 1.6};

    const std::string path = temp_path("groups.json");
    std::remove(path.c_str());
    save_measured_costs(path, pair);
    expect_error(PAGODA_ERR_NOT_FOUND, "/ tp=2", [&] { find_measured_costs(path, one.shape); });
    expect_error(PAGODA_ERR_NOT_FOUND, "no one-device measurement", [&] { find_measured_cost_set(path, one.shape); });
    save_measured_costs(path, one);
    MeasuredLayerCosts pair_again = pair;
    pair_again.no_context_seconds = {0.6, 0.9, 1.2, 1.5};
    save_measured_costs(path, pair_again);  // the same key: replaces the group's entry
    assert_int_equal(read_cost_file(path).size(), 2);
    const std::vector<MeasuredLayerCosts> set = find_measured_cost_set(path, one.shape);
    assert_int_equal(set.size(), 2);
    assert_true(set[0].tensor_parallel == 1 && set[1].tensor_parallel == 2);
    assert_true(set[1].no_context_seconds == pair_again.no_context_seconds);
    assert_true(find_measured_costs(path, one.shape).tensor_parallel == 1);

    const CostModel m(set);
    assert_true((m.measured_tensor_parallel() == std::vector<int32_t>{1, 2}));
    assert_true(close(m.layer_seconds(16, 0, 2), set[1].seconds(16, 0), 1e-12));
    assert_true(m.embedding_seconds(8, 2) == 0.0 && m.head_seconds(1, 2) == 0.0);
    // Four devices were not timed: one device's time split four ways plus modelled all-reduces.
    const CostModel alone(one);
    assert_true(close(m.layer_seconds(16, 0, 4), alone.layer_seconds(16, 0, 4), 1e-12));
    assert_true(m.head_seconds(1, 4) > 0.0);
    // Across nodes the group's times (taken on one machine) do not apply.
    assert_true(close(m.layer_seconds(16, 0, 2, true), alone.layer_seconds(16, 0, 2, true), 1e-12));

    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "2-device group given as one device's", [&] { CostModel{pair}; });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "given twice",
                 [&] { CostModel(std::vector<MeasuredLayerCosts>{one, pair, pair}); });

    // A file written before groups were timed has no "tensor_parallel": one device.
    nlohmann::json legacy = nlohmann::json::parse(measured_costs_json(pair));
    legacy.erase("tensor_parallel");
    std::ofstream(path, std::ios::trunc) << nlohmann::json{{"format", "pagoda-costs"}, {"version", 1},
                                                           {"entries", nlohmann::json::array({legacy})}}.dump();
    assert_int_equal(read_cost_file(path).front().tensor_parallel, 1);
    legacy["tensor_parallel"] = 0;
    std::ofstream(path, std::ios::trunc) << nlohmann::json{{"format", "pagoda-costs"}, {"version", 1},
                                                           {"entries", nlohmann::json::array({legacy})}}.dump();
    expect_error(PAGODA_ERR_FORMAT, "tensor_parallel is 0", [&] { read_cost_file(path); });
    std::remove(path.c_str());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_coefficients),
        cmocka_unit_test(test_roofline_numbers),
        cmocka_unit_test(test_stage_table),
        cmocka_unit_test(test_measured_costs),
        cmocka_unit_test(test_measured_groups),
        cmocka_unit_test(test_generation_steps),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
