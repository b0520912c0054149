// Planning a mixture of experts: a layer's memory counts every expert and its reads only the
// picked ones, the expert split per stage follows what divides, plans carry the experts through
// JSON (and older plans without them read as dense), and layouts refuse splits that do not fit.
#include <cmath>

#include "mesh/layout.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_spec.hpp"
#include "plan/plan.hpp"
#include "plan/plan_json.hpp"

#include "plan_test_support.hpp"

using namespace pagoda::plan;
using pagoda::test::expect_error;

namespace {

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// Qwen3-30B-A3B's shape: 128 experts of 768 columns, 8 per token, every layer sparse.
ModelShape qwen3_30b_a3b() {
    ModelShape s;
    s.hidden = 2048;
    s.intermediate = 6144;
    s.layers = 48;
    s.heads = 32;
    s.kv_heads = 4;
    s.head_dim = 128;
    s.vocab = 151936;
    s.experts = 128;
    s.experts_per_token = 8;
    s.expert_intermediate = 768;
    s.sparse_layers = 48;
    return s;
}

void test_parameters_count_experts(void **) {
    const ModelShape s = qwen3_30b_a3b();
    const double h = 2048, attention = h * (4096 + 2 * 512) + 4096 * h + 2 * h;
    const double expert = 3 * h * 768, router = h * 128;
    assert_true(close(s.layer_parameters(), attention + router + 128 * expert, 1e-12));
    assert_true(close(s.layer_parameters_active(), attention + router + 8 * expert, 1e-12));
    // 48 layers hold 29.9 B parameters, 30.5 B with the embeddings and head: the model's "30B".
    assert_true(s.layer_parameters() * 48 > 29.5e9 && s.layer_parameters() * 48 < 30.3e9);
    // One token reads its 8 experts; 16 read 128·(1 − (15/16)^16) ≈ 82 distinct ones.
    assert_true(close(s.layer_parameters_read(1), s.layer_parameters_active(), 1e-12));
    const double distinct16 = 128 * (1 - std::pow(1 - 8.0 / 128, 16));
    assert_true(close(s.layer_parameters_read(16), attention + router + distinct16 * expert, 1e-12));
    assert_true(s.layer_parameters_read(100000) <= s.layer_parameters() * (1 + 1e-12));
    // A decode step's roofline reads the active bytes, not the total.
    const CostModel m(s, device_preset("h100"));
    assert_true(m.layer_traffic_bytes(1, 0) < 0.1 * m.layer_weight_bytes());
    assert_true(s.key() == "h2048-i6144-l48-q32-kv4-d128-v151936-e128k8x768s48");
    ModelShape bad = s;
    bad.experts_per_token = 129;
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "per token", [&] { validate(bad); });
    bad = s;
    bad.experts = 0;
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "expert fields without experts", [&] { validate(bad); });
}

void test_expert_split_choice(void **) {
    ModelShape s = qwen3_30b_a3b();
    // 768 columns split over 8 devices: by columns, the balanced split.
    assert_int_equal(expert_parallel_for(s, 8, 0), 1);
    assert_int_equal(expert_parallel_for(s, 8, 4), 4);
    // Q4_K_M's 256-value blocks: 96 or 192 columns would split them (and be widened to f32), so
    // each expert stays whole on one device of eight.
    assert_int_equal(expert_parallel_for(s, 8, 0, 256), 8);
    assert_int_equal(expert_parallel_for(s, 2, 0, 256), 2);
    assert_int_equal(expert_parallel_for(s, 8, 0, 32), 1);  // Q8_0: 96 columns are 3 blocks
    // 96 columns (3·32) do not split over 64 devices; groups of 32 take them.
    s.expert_intermediate = 96;
    assert_int_equal(expert_parallel_for(s, 64, 0), 2);
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "128 experts", [&] { expert_parallel_for(s, 6, 3); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "must divide", [&] { expert_parallel_for(s, 8, 3); });
    ModelShape dense = s;
    dense.experts = dense.experts_per_token = dense.expert_intermediate = dense.sparse_layers = 0;
    assert_int_equal(expert_parallel_for(dense, 8, 0), 1);
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "dense", [&] { expert_parallel_for(dense, 2, 2); });
}

void test_plan_carries_experts(void **) {
    PlanRequest r;
    r.mesh = {1, 8};
    r.device = "h100";
    r.partition.tensor_parallel = 8;
    r.partition.expert_parallel = 4;
    const Plan p = make_plan(qwen3_30b_a3b(), r);
    for (const Stage &s : p.partition.stages) assert_int_equal(s.expert_parallel, 4);
    // Every expert's bytes are held: 30 B parameters in bf16 over 8 devices is 7.5 GB each.
    assert_true(p.partition.stages.front().memory_bytes > 7e9);
    const Plan back = plan_from_json(plan_to_json(p));
    assert_true(back.shape == p.shape);
    assert_int_equal(back.partition.stages.front().expert_parallel, 4);
    assert_int_equal(back.partition_options.expert_parallel, 4);
    // A plan written before experts existed reads as dense, each stage's experts unsplit.
    ModelShape dense_shape = qwen3_30b_a3b();
    dense_shape.experts = dense_shape.experts_per_token = dense_shape.expert_intermediate = 0;
    dense_shape.sparse_layers = 0;
    r.partition.expert_parallel = 0;
    std::string old = plan_to_json(make_plan(dense_shape, r));
    for (const char *key : {"\"experts\": 0,", "\"experts_per_token\": 0,", "\"expert_intermediate\": 0,",
                            "\"sparse_layers\": 0,", "\"expert_parallel\": 1,", "\"requested_expert_parallel\": 0,"}) {
        const size_t at = old.find(key);
        assert_true(at != std::string::npos);
        old.erase(at, std::string(key).size());
    }
    const Plan dense = plan_from_json(old);
    assert_int_equal(dense.shape.experts, 0);
    assert_int_equal(dense.partition.stages.front().expert_parallel, 1);
    // A stage whose split does not fit the model is refused by name.
    std::string wrong = plan_to_json(p);
    const size_t at = wrong.find("\"expert_parallel\": 4");
    wrong.replace(at, std::string("\"expert_parallel\": 4").size(), "\"expert_parallel\": 3");
    expect_error(PAGODA_ERR_FORMAT, "expert_parallel", [&] { plan_from_json(wrong); });
}

void test_layout_checks_experts(void **) {
    const pagoda::mesh::SplitShape moe{32, 4, 6144, 128, 768}, dense{32, 4, 6144, 0, 0};
    pagoda::mesh::check_expert_parallel(moe, 8, 2);
    pagoda::mesh::check_expert_parallel(dense, 8, 1);
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "dense", [&] { pagoda::mesh::check_expert_parallel(dense, 2, 2); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "does not divide the stage's 6 devices",
                 [&] { pagoda::mesh::check_expert_parallel(moe, 6, 4); });
    const pagoda::mesh::SplitShape odd{32, 4, 6144, 6, 768};
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "6 experts", [&] { pagoda::mesh::check_expert_parallel(odd, 4, 4); });
    const pagoda::mesh::SplitShape narrow{32, 4, 6144, 128, 96};
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "96 MLP columns",
                 [&] { pagoda::mesh::check_expert_parallel(narrow, 128, 2); });
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters_count_experts),
        cmocka_unit_test(test_expert_split_choice),
        cmocka_unit_test(test_plan_carries_experts),
        cmocka_unit_test(test_layout_checks_experts),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
