// pagoda_placement_search through the C ABI: two models on one node of four devices give a
// placement that pagoda_placement_simulate reads and scores as the search did; models described
// by a config.json; and bad specs fail with the right status and a message naming the field.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "pagoda/pagoda.h"
#include "plan/measured_costs.hpp"

#include "plan_test_support.hpp"

namespace {

using nlohmann::json;

// Two small Llama-shaped models on the CPU preset: a ≈ 25 ms and b ≈ 74 ms per 64-token request
// on two devices, so 20 req/s each with SLOs of 0.1 s and 0.3 s leave the search real choices
// (attainment well below 1 whatever it does).
const char *kSpec = R"({
  "cluster": {"nodes": 1, "devices_per_node": 4, "device": "cpu", "memory_bytes": 2e9},
  "models": [
    {"name": "a", "shape": {"hidden": 512, "intermediate": 1376, "layers": 8, "heads": 8,
                            "kv_heads": 8, "vocab": 8000}},
    {"name": "b", "shape": {"hidden": 768, "intermediate": 2048, "layers": 12, "heads": 12,
                            "kv_heads": 4, "vocab": 8000}, "slo": 0.3}],
  "request": {"tokens": 64},
  "search": {"max_pipeline": 4, "max_tensor": 4, "beam_width": 1, "fast_greedy": false}
})";

pagoda_simulate_options_t workload() {
    pagoda_simulate_options_t o;
    pagoda_simulate_options_default(&o);
    o.rate_per_model = 20.0;
    o.slo_seconds = 0.1;
    o.duration_seconds = 200.0;
    o.seed = 7;
    return o;
}

std::string search(const std::string &spec, const pagoda_simulate_options_t &o) {
    char *text = nullptr;
    const pagoda_status_t s = pagoda_placement_search(spec.c_str(), &o, &text);
    if (s != PAGODA_OK)
        fail_msg("pagoda_placement_search: %s: %s", pagoda_status_string(s), pagoda_last_error_message());
    std::string out = text;
    pagoda_free(text);
    return out;
}

void expect_status(pagoda_status_t got, pagoda_status_t want, const char *part) {
    if (got != want)
        fail_msg("want %s, got %s: %s", pagoda_status_string(want), pagoda_status_string(got),
                 pagoda_last_error_message());
    if (std::strstr(pagoda_last_error_message(), part) == nullptr)
        fail_msg("message \"%s\" does not mention \"%s\"", pagoda_last_error_message(), part);
}

// The search's spec with `path` (a JSON pointer) set to `value`.
std::string spec_with(const char *pointer, const json &value) {
    json spec = json::parse(kSpec);
    spec[json::json_pointer(pointer)] = value;
    return spec.dump();
}

void expect_search_fails(const std::string &spec, pagoda_status_t want, const char *part) {
    const pagoda_simulate_options_t o = workload();
    char *untouched = reinterpret_cast<char *>(&untouched);  // any non-NULL marker
    char *text = untouched;
    expect_status(pagoda_placement_search(spec.c_str(), &o, &text), want, part);
    assert_ptr_equal(text, untouched);
}

void test_search_then_simulate(void **) {
    const pagoda_simulate_options_t o = workload();
    const std::string placement = search(kSpec, o);
    std::printf("placement: %s\n", placement.c_str());
    const json p = json::parse(placement);

    // Every model is served somewhere; the groups use distinct devices of the four.
    int used[4] = {0, 0, 0, 0};
    int replicas[2] = {0, 0};
    for (const json &group : p["groups"]) {
        const int pipeline = group["pipeline"], tensor = group["tensor"];
        assert_int_equal(group["devices"].size(), size_t(pipeline * tensor));
        for (const json &d : group["devices"]) {
            const int device = d;
            assert_true(device >= 0 && device < 4);
            assert_int_equal(used[device]++, 0);
        }
        for (const json &r : group["replicas"]) {
            assert_int_equal(r["stage_seconds"].size(), size_t(pipeline));
            assert_int_equal(r["stage_bytes"].size(), size_t(pipeline));
            for (const json &bytes : r["stage_bytes"]) assert_true(double(bytes) <= 2e9);
            replicas[r["model"] == "a" ? 0 : 1]++;
        }
    }
    assert_true(replicas[0] >= 1 && replicas[1] >= 1);
    assert_true(p["models"][1]["slo"] == 0.3);
    assert_false(p["models"][0].contains("slo"));  // it takes the workload's SLO
    const json &found = p["search"];
    assert_true(found["simulations"].get<int64_t>() > 0);
    assert_true(found["seconds"].get<double>() >= 0.0);
    const double attainment = found["slo_attainment"];
    assert_true(attainment > 0.3 && attainment < 1.0);

    // The simulator, given the same workload, draws the same requests and agrees exactly.
    char *result = nullptr;
    assert_int_equal(pagoda_placement_simulate(placement.c_str(), &o, &result), PAGODA_OK);
    const json r = json::parse(result);
    pagoda_free(result);
    std::printf("search %.6f, simulate %.6f over %lld requests\n", attainment,
                r["slo_attainment"].get<double>(), (long long)r["requests"].get<int64_t>());
    assert_true(r["requests"] == found["requests"]);
    assert_float_equal(r["slo_attainment"].get<double>(), attainment, 1e-12);

    // Deterministic: the same spec and workload, the same placement.
    json again = json::parse(search(kSpec, o));
    json first = p;
    again.erase("search");
    first.erase("search");
    assert_true(again == first);
}

void test_per_model_rate_and_defaults(void **) {
    // A model's own rate replaces the workload's: b at 0 req/s leaves only a's requests.
    const std::string placement = search(spec_with("/models/1/rate", 0.0), workload());
    const json p = json::parse(placement);
    const int64_t requests = p["search"]["requests"];
    const std::string both = search(kSpec, workload());
    const int64_t both_requests = json::parse(both)["search"]["requests"];
    assert_true(requests > 0 && requests < both_requests);
    // The fast heuristic (one simulation per round) also yields a placement the simulator reads.
    const pagoda_simulate_options_t o = workload();
    const std::string fast = search(spec_with("/search/fast_greedy", true), o);
    char *result = nullptr;
    assert_int_equal(pagoda_placement_simulate(fast.c_str(), &o, &result), PAGODA_OK);
    assert_float_equal(json::parse(result)["slo_attainment"].get<double>(),
                       json::parse(fast)["search"]["slo_attainment"].get<double>(), 1e-12);
    pagoda_free(result);
    // NULL options: the defaults (1 req/s for an hour, no default SLO).
    char *text = nullptr;
    assert_int_equal(pagoda_placement_search(kSpec, nullptr, &text), PAGODA_OK);
    assert_non_null(std::strstr(text, "\"slo_attainment\""));
    pagoda_free(text);
}

void test_model_from_config(void **) {
    const std::string path =
        std::string(P_tmpdir) + "/pagoda-placement-search-" + std::to_string(getpid()) + "-config.json";
    std::ofstream(path) << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 8,
        "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 8000,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "hidden_act": "silu"})";
    json spec = json::parse(kSpec);
    spec["models"][0].erase("shape");
    spec["models"][0]["config"] = path;
    const std::string from_config = search(spec.dump(), workload());
    std::remove(path.c_str());
    // The same shape inline or from config.json: the same placement.
    json a = json::parse(from_config), b = json::parse(search(kSpec, workload()));
    a.erase("search");
    b.erase("search");
    assert_true(a == b);
    expect_search_fails(spec.dump(), PAGODA_ERR_IO, "models[0].config");  // now removed
}

// A cost file with an entry for `shape`: every t(l, 0) is `layer_seconds` (no context term).
pagoda::plan::MeasuredLayerCosts flat_costs(const json &shape, double layer_seconds) {
    pagoda::plan::MeasuredLayerCosts c;
    c.backend = "cpu";
    c.device = "test";
    c.dtype = "f32";
    c.shape.hidden = shape["hidden"];
    c.shape.intermediate = shape["intermediate"];
    c.shape.layers = shape["layers"];
    c.shape.heads = shape["heads"];
    c.shape.kv_heads = shape["kv_heads"];
    c.shape.vocab = shape["vocab"];
    c.shape.head_dim = c.shape.hidden / c.shape.heads;
    c.device_spec = pagoda::plan::device_preset("cpu");
    c.granularity = 8;
    c.no_context_seconds.assign(8, layer_seconds);
    return c;
}

// Measured costs and a generation: with one device per group, a replica's one stage costs its
// layers × (the prompt's step + one step per further token), all from the cost file, and the
// spec's overhead travels with the placement. A model without an entry is refused by name.
void test_measured_costs_and_generation(void **) {
    const std::string path =
        std::string(P_tmpdir) + "/pagoda-placement-search-" + std::to_string(getpid()) + "-costs.json";
    std::remove(path.c_str());
    json spec = json::parse(kSpec);
    pagoda::plan::save_measured_costs(path, flat_costs(spec["models"][0]["shape"], 1e-3));
    spec["cluster"].erase("device");
    spec["cluster"]["costs"] = path;
    spec["request"] = {{"prompt_tokens", 8}, {"output_tokens", 4}};
    spec["overhead"] = 0.005;
    spec["search"]["max_pipeline"] = 1;
    spec["search"]["max_tensor"] = 1;
    expect_search_fails(spec.dump(), PAGODA_ERR_NOT_FOUND, "model \"b\"");

    pagoda::plan::save_measured_costs(path, flat_costs(spec["models"][1]["shape"], 2e-3));
    const json p = json::parse(search(spec.dump(), workload()));
    std::remove(path.c_str());
    assert_string_equal(p["search"]["costs"].get<std::string>().c_str(), ("measured:" + path).c_str());
    assert_string_equal(p["search"]["link_source"].get<std::string>().c_str(), "assumed");
    assert_float_equal(p["overhead"].get<double>(), 0.005, 1e-12);
    // 4 steps (8 prompt tokens, then 3 single tokens) × layers × the flat layer time.
    const double want[2] = {4 * 8 * 1e-3, 4 * 12 * 2e-3};
    int replicas = 0;
    for (const json &group : p["groups"])
        for (const json &replica : group["replicas"]) {
            const int m = replica["model"] == "a" ? 0 : 1;
            assert_int_equal(replica["stage_seconds"].size(), 1);
            assert_float_equal(replica["stage_seconds"][0].get<double>(), want[m], 1e-9);
            ++replicas;
        }
    assert_true(replicas >= 2);

    json both = spec;
    both["cluster"]["device"] = "cpu";
    expect_search_fails(both.dump(), PAGODA_ERR_INVALID_ARGUMENT, "both \"device\" and \"costs\"");
    json mixed = spec;
    mixed["request"]["tokens"] = 64;
    expect_search_fails(mixed.dump(), PAGODA_ERR_INVALID_ARGUMENT, "request mixes one step");
    json half = spec;
    half["request"].erase("output_tokens");
    expect_search_fails(half.dump(), PAGODA_ERR_FORMAT, "has no \"output_tokens\"");
    expect_search_fails(spec.dump(), PAGODA_ERR_IO, path.c_str());  // the cost file is gone
}

// A tensor-parallel group timed on its devices: a replica on a group of that degree costs the
// group's own time (nothing modelled on top), one on a single device the one-device time, and
// the search says which degrees it took as measured, per model.
void test_measured_tensor_groups(void **) {
    const std::string path =
        std::string(P_tmpdir) + "/pagoda-placement-search-" + std::to_string(getpid()) + "-groups.json";
    std::remove(path.c_str());
    json spec = json::parse(kSpec);
    for (const json &model : spec["models"]) pagoda::plan::save_measured_costs(path, flat_costs(model["shape"], 1e-3));
    pagoda::plan::MeasuredLayerCosts pair = flat_costs(spec["models"][0]["shape"], 0.25e-3);
    pair.tensor_parallel = 2;
    pagoda::plan::save_measured_costs(path, pair);
    // Links measured within a machine price the all-reduces of the degrees nobody timed.
    pagoda::plan::MeasuredLink link;
    link.backend = "cpu";
    link.path = pagoda::plan::LinkPath::WithinMachine;
    link.between = "cpu:0@rank0 and cpu:0@rank1";
    link.transport = "shared_memory";
    link.all_reduce_samples = {{4096, 30e-6}, {1 << 20, 300e-6}};
    link.send_samples = {{4096, 15e-6}, {1 << 20, 100e-6}};
    pagoda::plan::fit_measured_link(link);
    pagoda::plan::save_measured_link(path, link);
    spec["cluster"].erase("device");
    spec["cluster"]["costs"] = path;
    spec["request"] = {{"prompt_tokens", 8}, {"output_tokens", 4}};
    spec["search"]["max_pipeline"] = 1;
    spec["search"]["max_tensor"] = 2;
    const json p = json::parse(search(spec.dump(), workload()));
    std::remove(path.c_str());
    assert_string_equal(p["search"]["link_source"].get<std::string>().c_str(),
                        "measured within_machine within nodes; assumed across nodes");
    assert_true((p["search"]["measured_tensor_parallel"]["a"] == json::array({1, 2})));
    assert_true((p["search"]["measured_tensor_parallel"]["b"] == json::array({1})));
    int pairs = 0;
    for (const json &group : p["groups"])
        for (const json &replica : group["replicas"]) {
            if (replica["model"] != "a") continue;
            const int tp = group["tensor"];
            // 4 steps × 8 layers × the group's time, or the one device's.
            const double want = tp == 2 ? 4 * 8 * 0.25e-3 : tp == 1 ? 4 * 8 * 1e-3 : -1;
            assert_float_equal(replica["stage_seconds"][0].get<double>(), want, 1e-9);
            pairs += tp == 2;
        }
    assert_true(pairs > 0);  // twice as fast per device as one alone: the search takes the pair
}

void test_bad_specs(void **) {
    expect_search_fails("{\"cluster\": [}", PAGODA_ERR_FORMAT, "byte");
    expect_search_fails(spec_with("/models/1/shape/hidden", "768"), PAGODA_ERR_FORMAT,
                        "models[1].shape.hidden must be an integer");
    expect_search_fails(spec_with("/search/beam", 2), PAGODA_ERR_FORMAT, "search has an unknown field \"beam\"");
    expect_search_fails(spec_with("/cluster/devices_per_node", "4"), PAGODA_ERR_FORMAT,
                        "cluster.devices_per_node");
    expect_search_fails(spec_with("/models", json::array()), PAGODA_ERR_INVALID_ARGUMENT, "models is empty");
    expect_search_fails(spec_with("/models/1/name", "a"), PAGODA_ERR_INVALID_ARGUMENT, "models[1].name");
    expect_search_fails(spec_with("/models/0/config", "x.json"), PAGODA_ERR_INVALID_ARGUMENT,
                        "exactly one of \"config\"");
    expect_search_fails(spec_with("/models/0/slo", -1.0), PAGODA_ERR_INVALID_ARGUMENT, "models[0].slo");
    expect_search_fails(spec_with("/models/0/rate", -1.0), PAGODA_ERR_INVALID_ARGUMENT, "models[0].rate");
    expect_search_fails(spec_with("/models/1/shape/heads", 10), PAGODA_ERR_INVALID_ARGUMENT,
                        "models[1].shape has heads = 10");
    expect_search_fails(spec_with("/cluster/devices_per_node", 0), PAGODA_ERR_INVALID_ARGUMENT,
                        "cluster.devices_per_node");
    expect_search_fails(spec_with("/search/max_tensor", 0), PAGODA_ERR_INVALID_ARGUMENT, "search.max_tensor");
    expect_search_fails(spec_with("/cluster/memory_bytes", 0), PAGODA_ERR_INVALID_ARGUMENT,
                        "cluster.memory_bytes");
    expect_search_fails(spec_with("/cluster/device", "tpu-v9"), PAGODA_ERR_NOT_FOUND, "cluster.device");
    // 50 MB per device: b's 12 layers fit no configuration of four devices.
    expect_search_fails(spec_with("/cluster/memory_bytes", 5e7), PAGODA_ERR_UNSUPPORTED, "(\"b\") fits no configuration");

    pagoda_simulate_options_t o = workload();
    o.cv = -1.0;
    char *text = nullptr;
    expect_status(pagoda_placement_search(kSpec, &o, &text), PAGODA_ERR_INVALID_ARGUMENT, "workload->cv");
    assert_null(text);
    expect_status(pagoda_placement_search(nullptr, nullptr, &text), PAGODA_ERR_INVALID_ARGUMENT, "spec_json");
    expect_status(pagoda_placement_search(kSpec, nullptr, nullptr), PAGODA_ERR_INVALID_ARGUMENT,
                  "placement_json");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_then_simulate),
        cmocka_unit_test(test_per_model_rate_and_defaults),
        cmocka_unit_test(test_model_from_config),
        cmocka_unit_test(test_measured_costs_and_generation),
        cmocka_unit_test(test_measured_tensor_groups),
        cmocka_unit_test(test_bad_specs),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
