// plan.h through the C ABI: planning Llama-3-70B from its config.json on 8 × 8 H100s, a model
// handle with a mesh handle, JSON round trips, the getters, and clear errors for bad options,
// bad handles and malformed plan JSON.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#include "pagoda/pagoda.h"

#include "plan_test_support.hpp"

namespace {

// Llama-3-70B's config.json (the fields the parser reads).
const char *kLlama70b = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
  "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
  "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
  "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
  "tie_word_embeddings": false, "bos_token_id": 128000, "eos_token_id": 128001
})";

std::string g_config;

int write_config(void **) {
    g_config = std::string(P_tmpdir) + "/pagoda-plan-api-" + std::to_string(getpid()) + "-config.json";
    std::ofstream(g_config) << kLlama70b;
    return 0;
}

int remove_config(void **) {
    std::remove(g_config.c_str());
    return 0;
}

void expect_status(pagoda_status_t got, pagoda_status_t want, const char *part) {
    if (got != want)
        fail_msg("want %s, got %s: %s", pagoda_status_string(want), pagoda_status_string(got),
                 pagoda_last_error_message());
    if (std::strstr(pagoda_last_error_message(), part) == nullptr)
        fail_msg("message \"%s\" does not mention \"%s\"", pagoda_last_error_message(), part);
}

std::string to_json(const pagoda_plan_t *plan) {
    char *text = nullptr;
    assert_int_equal(pagoda_plan_to_json(plan, &text), PAGODA_OK);
    std::string s = text;
    pagoda_free(text);
    return s;
}

void test_llama70b_on_8x8_h100(void **) {
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    o.device = "h100";
    o.mesh_shape = "8x8";
    o.kv_tokens = 200000;
    o.prompt_tokens = 8192;
    pagoda_plan_t *plan = nullptr;
    assert_int_equal(pagoda_plan_create_from_config(g_config.c_str(), &o, &plan), PAGODA_OK);

    pagoda_plan_summary_t sum;
    sum.struct_size = sizeof(sum);
    assert_int_equal(pagoda_plan_get_summary(plan, &sum), PAGODA_OK);
    assert_true(sum.n_stages >= 1);
    int64_t next = 0, devices = 0;
    double total = 0;
    for (size_t i = 0; i < sum.n_stages; ++i) {
        pagoda_plan_stage_t st;
        st.struct_size = sizeof(st);
        assert_int_equal(pagoda_plan_get_stage(plan, i, &st), PAGODA_OK);
        assert_int_equal(st.first_layer, next);
        next = st.end_layer;
        devices += st.tensor_parallel;
        total += st.seconds;
        assert_true(st.memory_bytes <= 80e9);
        assert_int_equal(st.has_embedding, i == 0);
        assert_int_equal(st.has_head, i + 1 == sum.n_stages);
    }
    assert_int_equal(next, 80);
    assert_int_equal(devices, 64);
    assert_true(std::abs(total - sum.latency_seconds) < 1e-9 * total);
    // A sliced prefill of 8192 tokens is faster than the best equal slicing, or equal to it.
    assert_true(sum.n_slices >= 1);
    assert_true(sum.sliced_prefill_seconds <= sum.uniform_prefill_seconds);
    int64_t covered = 0;
    for (size_t i = 0; i < sum.n_slices; ++i) covered += pagoda_plan_slice_length(plan, i);
    assert_int_equal(covered, 8192);
    assert_int_equal(pagoda_plan_slice_length(plan, sum.n_slices), 0);

    // JSON round trip: the same text back.
    const std::string json = to_json(plan);
    pagoda_plan_t *back = nullptr;
    assert_int_equal(pagoda_plan_from_json(json.c_str(), &back), PAGODA_OK);
    assert_true(to_json(back) == json);
    pagoda_plan_destroy(back);

    pagoda_plan_stage_t st;
    st.struct_size = sizeof(st);
    expect_status(pagoda_plan_get_stage(plan, sum.n_stages, &st), PAGODA_ERR_INVALID_ARGUMENT, "out of range");
    pagoda_plan_destroy(plan);
    pagoda_plan_destroy(nullptr);
}

void test_throughput_objective(void **) {
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    o.device = "h100";
    o.mesh_shape = "2x8";
    o.objective = PAGODA_PLAN_THROUGHPUT;
    o.micro_batches = 16;
    pagoda_plan_t *lat = nullptr, *thr = nullptr;
    assert_int_equal(pagoda_plan_create_from_config(g_config.c_str(), &o, &thr), PAGODA_OK);
    o.objective = PAGODA_PLAN_LATENCY;
    assert_int_equal(pagoda_plan_create_from_config(g_config.c_str(), &o, &lat), PAGODA_OK);
    pagoda_plan_summary_t a, b;
    a.struct_size = b.struct_size = sizeof(a);
    pagoda_plan_get_summary(lat, &a);
    pagoda_plan_get_summary(thr, &b);
    // Each plan is best at its own objective.
    assert_true(a.latency_seconds <= b.latency_seconds + 1e-12);
    assert_true(b.latency_seconds + 15 * b.max_stage_seconds <= a.latency_seconds + 15 * a.max_stage_seconds + 1e-12);
    assert_true(std::strstr(to_json(thr).c_str(), "\"objective\": \"throughput\"") != nullptr);
    pagoda_plan_destroy(lat);
    pagoda_plan_destroy(thr);
}

void test_model_and_mesh_handles(void **) {
    pagoda_model_t *model = nullptr;
    assert_int_equal(pagoda_model_open(PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf", nullptr, &model),
                     PAGODA_OK);
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    o.mesh_shape = "1x2";
    o.step_tokens = 64;
    pagoda_plan_t *plan = nullptr;
    assert_int_equal(pagoda_plan_create(model, nullptr, &o, &plan), PAGODA_OK);
    const std::string json = to_json(plan);
    assert_true(json.find("\"hidden\": 64") != std::string::npos);
    assert_true(json.find("\"device\": \"cpu\"") != std::string::npos);
    pagoda_plan_destroy(plan);

    o.mesh_shape = nullptr;
    expect_status(pagoda_plan_create(model, nullptr, &o, &plan), PAGODA_ERR_INVALID_ARGUMENT, "no mesh");
    expect_status(pagoda_plan_create(nullptr, nullptr, &o, &plan), PAGODA_ERR_INVALID_HANDLE, "model is NULL");
    pagoda_model_destroy(model);
}

// On the CPU preset a plan counts the weights as the file stores them (the CPU backend computes
// on them as stored): a Q8_0 copy of the model (1.06 bytes a weight, against f32's 4) is planned
// with less memory per device and a faster, bandwidth-bound decode step.
void test_quantized_model_plans_smaller(void **) {
    char dir[] = "/tmp/pagoda_plan_q8_XXXXXX";
    assert_non_null(mkdtemp(dir));
    const std::string q8 = std::string(dir) + "/q8_0.gguf";
    const char *source = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";
    pagoda_quantize_options_t qo;
    pagoda_quantize_options_default(&qo);
    qo.type = PAGODA_QUANT_Q8_0;
    assert_int_equal(pagoda_model_quantize(source, q8.c_str(), &qo, nullptr), PAGODA_OK);
    pagoda_plan_stage_t stage[2];
    for (int i = 0; i < 2; ++i) {
        pagoda_model_t *model = nullptr;
        assert_int_equal(pagoda_model_open(i == 0 ? source : q8.c_str(), nullptr, &model), PAGODA_OK);
        pagoda_plan_options_t o;
        pagoda_plan_options_default(&o);
        o.mesh_shape = "1x1";
        o.step_tokens = 1;
        o.kv_tokens = 64;
        pagoda_plan_t *plan = nullptr;
        assert_int_equal(pagoda_plan_create(model, nullptr, &o, &plan), PAGODA_OK);
        std::memset(&stage[i], 0, sizeof stage[i]);
        stage[i].struct_size = sizeof stage[i];
        assert_int_equal(pagoda_plan_get_stage(plan, 0, &stage[i]), PAGODA_OK);
        pagoda_plan_destroy(plan);
        pagoda_model_destroy(model);
    }
    std::printf("  f32: %.0f bytes, %.3g s a step; q8_0: %.0f bytes, %.3g s\n", stage[0].memory_bytes,
                stage[0].seconds, stage[1].memory_bytes, stage[1].seconds);
    assert_true(stage[1].memory_bytes < stage[0].memory_bytes);
    assert_true(stage[1].seconds < stage[0].seconds);
    assert_int_equal(std::remove(q8.c_str()), 0);
    assert_int_equal(rmdir(dir), 0);
}

void test_bad_options(void **) {
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    pagoda_plan_t *plan = nullptr;
    const char *cfg = g_config.c_str();
    o.mesh_shape = "8by8";
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_INVALID_ARGUMENT, "\"8by8\"");
    o.mesh_shape = "2x6";
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_UNSUPPORTED, "power of two");
    o.mesh_shape = "1x8";
    o.objective = 7;
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_INVALID_ARGUMENT, "options->objective is 7");
    o.objective = PAGODA_PLAN_LATENCY;
    o.device = "tpu";
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_NOT_FOUND, "known: h100, cpu");
    o.device = "h100";
    o.mesh_shape = "1x1";  // 70B in bf16 does not fit one 80 GB GPU
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_UNSUPPORTED, "per device");
    o.mesh_shape = "1x8";
    o.prompt_tokens = 100;  // not a multiple of the granularity 8
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_INVALID_ARGUMENT, "granularity 8");
    o.prompt_tokens = 0;
    o.cost_file = "/nonexistent/costs.json";
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_IO, "/nonexistent/costs.json");
    o.cost_file = nullptr;
    o.struct_size = 0;
    expect_status(pagoda_plan_create_from_config(cfg, &o, &plan), PAGODA_ERR_INVALID_ARGUMENT, "struct_size");
    o.struct_size = sizeof(o);
    expect_status(pagoda_plan_create_from_config("/nonexistent/config.json", &o, &plan), PAGODA_ERR_IO,
                  "/nonexistent/config.json");
    assert_null(plan);  // untouched on every failure
}

void test_bad_json(void **) {
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    o.device = "h100";
    o.mesh_shape = "1x8";
    pagoda_plan_t *plan = nullptr;
    assert_int_equal(pagoda_plan_create_from_config(g_config.c_str(), &o, &plan), PAGODA_OK);
    const std::string good = to_json(plan);
    pagoda_plan_destroy(plan);
    plan = nullptr;

    auto replaced = [&](const std::string &from, const std::string &to) {
        std::string s = good;
        const size_t at = s.find(from);
        if (at == std::string::npos) fail_msg("test setup: \"%s\" not in the plan JSON", from.c_str());
        return s.replace(at, from.size(), to);
    };
    struct Case {
        std::string text;
        const char *part;
    } cases[] = {
        {"{", "not valid JSON"},
        {"[]", "want an object"},
        {replaced("\"pagoda-plan\"", "\"other\""), "format"},
        {replaced("\"version\": 1", "\"version\": 9"), "version: 9"},
        {replaced("\"objective\": \"latency\"", "\"objective\": \"fast\""), "\"fast\""},
        {replaced("\"first_layer\": 0", "\"first_layer\": 3"), "stages[0].first_layer: 3, want 0"},
        {replaced("\"layers\": 80", "\"layers\": 81"), "end at layer 80 of 81"},
        {replaced("\"nodes\": 1,", "\"nodes\": \"one\","), "want an integer, got string"},
        {replaced("\"micro_batches\": 1", "\"micro_batches\": 0"), "micro_batches: 0 is below 1"},
        {replaced("\"slicing\": null", "\"slicing\": {\"prompt_tokens\": 16}"), "slicing.granularity: missing"},
    };
    for (const Case &c : cases)
        expect_status(pagoda_plan_from_json(c.text.c_str(), &plan), PAGODA_ERR_FORMAT, c.part);
    assert_null(plan);
    expect_status(pagoda_plan_from_json(nullptr, &plan), PAGODA_ERR_INVALID_ARGUMENT, "json is NULL");
    expect_status(pagoda_plan_to_json(nullptr, nullptr), PAGODA_ERR_INVALID_HANDLE, "plan is NULL");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama70b_on_8x8_h100),
        cmocka_unit_test(test_throughput_objective),
        cmocka_unit_test(test_model_and_mesh_handles),
        cmocka_unit_test(test_quantized_model_plans_smaller),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_bad_json),
    };
    return cmocka_run_group_tests(tests, write_config, remove_config);
}
