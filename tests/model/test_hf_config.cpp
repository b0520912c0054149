// hf_config and model_config: config.json and generation_config.json into a validated ModelConfig.
#include "model/hf_config.hpp"

#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;
using nlohmann::json;
using pagoda::test::expect_error;

namespace {

// A Llama 3-like config small enough to read at a glance.
json llama_config() {
    return json::parse(R"({
        "architectures": ["LlamaForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "tie_word_embeddings": false,
        "vocab_size": 256,
        "bos_token_id": 1,
        "eos_token_id": [2, 3]
    })");
}

ModelConfig parse(const json &j) { return parse_hf_config(j.dump(), "config.json"); }

void reads_llama3(void **) {
    const ModelConfig c = parse(llama_config());
    assert_int_equal(int(c.architecture), int(Architecture::Llama));
    assert_string_equal(c.architecture_name.c_str(), "LlamaForCausalLM");
    assert_string_equal(architecture_name(c.architecture), "llama");
    assert_int_equal(c.vocab_size, 256);
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.intermediate_size, 128);
    assert_int_equal(c.n_layers, 2);
    assert_int_equal(c.n_heads, 4);
    assert_int_equal(c.n_kv_heads, 2);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.max_position, 8192);
    assert_true(c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 500000.0);
    assert_int_equal(c.rope.layout, PAGODA_ROPE_HALF_SPLIT);
    assert_int_equal(c.rope.scaling, PAGODA_ROPE_SCALING_LLAMA3);
    assert_true(c.rope.factor == 8.0);
    assert_true(c.rope.low_freq_factor == 1.0);
    assert_true(c.rope.high_freq_factor == 4.0);
    assert_int_equal(c.rope.original_max_position, 8192);
    assert_false(c.tie_word_embeddings);
    assert_false(c.attention_bias);
    assert_int_equal(c.sliding_window, 0);
    assert_int_equal(c.bos_token_id, 1);
    assert_true(c.eos_token_ids == (std::vector<int32_t>{2, 3}));
}

void applies_defaults(void **) {
    json j = llama_config();
    for (const char *key : {"num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling",
                            "tie_word_embeddings", "bos_token_id", "eos_token_id", "hidden_act"})
        j.erase(key);
    j["rope_scaling"] = nullptr;  // transformers writes absent options as null
    const ModelConfig c = parse(j);
    assert_int_equal(c.n_kv_heads, 4);
    assert_true(c.rms_norm_eps == 1e-6);
    assert_true(c.rope.theta == 10000.0);
    assert_int_equal(c.rope.scaling, PAGODA_ROPE_SCALING_NONE);
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.bos_token_id, -1);
    assert_true(c.eos_token_ids.empty());
}

void reads_rope_scaling_variants(void **) {
    json j = llama_config();
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // the older key name
    ModelConfig c = parse(j);
    assert_int_equal(c.rope.scaling, PAGODA_ROPE_SCALING_LINEAR);
    assert_true(c.rope.factor == 2.0);
    j["rope_scaling"] = {{"rope_type", "default"}};
    assert_int_equal(parse(j).rope.scaling, PAGODA_ROPE_SCALING_NONE);
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED,
                 {"config.json", "yarn", "linear, llama3"});
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"rope_scaling.low_freq_factor", "missing"});
    j = llama_config();
    j["rope_scaling"]["high_freq_factor"] = 0.5;  // below low_freq_factor
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT,
                 {"config.json", "low_freq_factor < high_freq_factor"});
    j = llama_config();
    j["rope_scaling"]["factor"] = 0;
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "factor"});
}

void reads_qwen_and_mistral(void **) {
    json j = llama_config();
    j["architectures"] = {"Qwen2ForCausalLM"};
    j["tie_word_embeddings"] = true;
    j["sliding_window"] = 4096;
    j["use_sliding_window"] = false;
    j.erase("rope_scaling");
    ModelConfig c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Qwen2));
    assert_string_equal(architecture_name(c.architecture), "qwen2");
    assert_true(c.attention_bias);
    assert_true(c.tie_word_embeddings);
    assert_int_equal(c.sliding_window, 0);  // present, but off
    // On, it applies from layer max_window_layers (transformers' default 28) on.
    j["use_sliding_window"] = true;
    j["num_hidden_layers"] = 30;
    c = parse(j);
    assert_int_equal(c.window_of(27), 0);
    assert_int_equal(c.window_of(28), 4096);
    j["max_window_layers"] = 0;
    c = parse(j);
    assert_int_equal(c.window_of(0), 4096);
    j["max_window_layers"] = 30;
    assert_int_equal(parse(j).sliding_window, 0);  // no layer slides
    j["max_window_layers"] = -1;
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "max_window_layers"});

    // Qwen3: per-head Q/K norms, no biases unless stated.
    j = llama_config();
    j["architectures"] = {"Qwen3ForCausalLM"};
    j["head_dim"] = 128;
    c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Qwen3));
    assert_string_equal(architecture_name(c.architecture), "qwen3");
    assert_true(c.qk_norm);
    assert_false(c.attention_bias);
    assert_int_equal(c.head_dim, 128);

    j = llama_config();
    j["architectures"] = {"MistralForCausalLM"};
    j["sliding_window"] = 4096;
    j["head_dim"] = 32;  // explicit and different from hidden_size / heads
    c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Mistral));
    assert_string_equal(architecture_name(c.architecture), "mistral");
    assert_int_equal(c.sliding_window, 4096);
    assert_int_equal(c.head_dim, 32);
    assert_false(c.attention_bias);

    j = llama_config();
    j["attention_bias"] = true;  // Llama may say so explicitly
    assert_true(parse(j).attention_bias);
}

// Gemma 2 and 3 as their configs ship (google/gemma-2-2b, google/gemma-3-1b-pt), trimmed to what
// Pagoda reads; transformers' defaults where the files leave keys out.
void reads_gemma(void **) {
    json j = json::parse(R"({
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "query_pre_attn_scalar": 256, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0, "vocab_size": 256000, "bos_token_id": 2,
        "eos_token_id": 1, "torch_dtype": "float32"
    })");
    ModelConfig c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Gemma2));
    assert_string_equal(architecture_name(c.architecture), "gemma2");
    assert_true(c.tie_word_embeddings);  // Gemma's default
    assert_true(c.sandwich_norms);
    assert_false(c.qk_norm);
    assert_true(c.norm_weight_offset == 1.0);
    assert_int_equal(c.mlp_activation, PAGODA_GLU_GELU_TANH);
    assert_true(c.embedding_scale == double(float(48.0)));  // √2304
    assert_true(c.attention_scale() == 1.0 / 16.0);
    assert_true(c.attn_logit_softcap == 50.0 && c.final_logit_softcap == 30.0);
    assert_int_equal(c.window_of(0), 4096);  // even layers slide
    assert_int_equal(c.window_of(1), 0);
    assert_false(c.has_sliding_rope);
    j["final_logit_softcapping"] = nullptr;  // null: none; absent: the default
    assert_true(parse(j).final_logit_softcap == 0.0);
    j.erase("final_logit_softcapping");
    assert_true(parse(j).final_logit_softcap == 30.0);
    j["layer_types"] = json::array();
    for (int i = 0; i < 26; ++i) j["layer_types"].push_back(i < 2 ? "full_attention" : "sliding_attention");
    c = parse(j);
    assert_int_equal(c.window_of(0), 0);
    assert_int_equal(c.window_of(25), 4096);
    j["layer_types"][3] = "chunked_attention";
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED, {"config.json", "layer_types[3]", "chunked_attention"});
    j["layer_types"] = json::array({"full_attention"});
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "layer_types", "one entry per layer"});
    j.erase("layer_types");
    j["hidden_activation"] = "gelu";
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED, {"config.json", "hidden_activation", "gelu_pytorch_tanh"});

    j = json::parse(R"({
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "intermediate_size": 6912,
        "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 256, "max_position_embeddings": 32768, "query_pre_attn_scalar": 256,
        "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
        "sliding_window": 512, "sliding_window_pattern": 6, "attn_logit_softcapping": null,
        "final_logit_softcapping": null, "vocab_size": 262144, "torch_dtype": "bfloat16"
    })");
    c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Gemma3));
    assert_true(c.qk_norm);
    assert_true(c.embedding_scale == 34.0);  // √1152 = 33.94 rounded to bf16, as transformers does
    assert_true(c.attn_logit_softcap == 0.0 && c.final_logit_softcap == 0.0);
    assert_int_equal(c.window_of(4), 512);  // five windowed layers, then a global one
    assert_int_equal(c.window_of(5), 0);
    assert_true(c.rope_of(4).theta == 10000.0);
    assert_true(c.rope_of(5).theta == 1e6);
    j["sliding_window_pattern"] = 0;
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "sliding_window_pattern"});
    j["architectures"] = {"Gemma3ForConditionalGeneration"};
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED, {"config.json", "vision", "Gemma3ForCausalLM"});
}

// Mixtral and Qwen3-MoE configs as shipped (mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen3-30B-A3B),
// trimmed to what Pagoda reads.
void reads_mixture_of_experts(void **) {
    json j = llama_config();
    j["architectures"] = {"MixtralForCausalLM"};
    j["num_local_experts"] = 8;
    j["num_experts_per_tok"] = 2;
    j.erase("rope_scaling");
    ModelConfig c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Mixtral));
    assert_int_equal(c.n_experts, 8);
    assert_int_equal(c.experts_per_token, 2);
    assert_int_equal(c.expert_intermediate_size, c.intermediate_size);
    assert_int_equal(c.moe_routing, PAGODA_MOE_SOFTMAX_TOPK_NORM);
    assert_true(c.is_sparse(0) && c.is_sparse(1));
    j["num_experts_per_tok"] = 9;
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "experts per token", "9"});
    j["num_experts_per_tok"] = 2;
    j["num_local_experts"] = 0;
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "expert count", "0"});

    j = llama_config();
    j["architectures"] = {"Qwen3MoeForCausalLM"};
    j.erase("rope_scaling");
    j["num_hidden_layers"] = 4;
    j["num_experts"] = 128;
    j["num_experts_per_tok"] = 8;
    j["moe_intermediate_size"] = 768;
    j["norm_topk_prob"] = true;
    j["mlp_only_layers"] = {1};
    j["decoder_sparse_step"] = 1;
    c = parse(j);
    assert_int_equal(int(c.architecture), int(Architecture::Qwen3Moe));
    assert_true(c.qk_norm);
    assert_int_equal(c.n_experts, 128);
    assert_int_equal(c.expert_intermediate_size, 768);
    assert_true(c.is_sparse(0) && !c.is_sparse(1) && c.is_sparse(2));
    j["norm_topk_prob"] = false;
    assert_int_equal(parse(j).moe_routing, PAGODA_MOE_SOFTMAX_TOPK);
    j["mlp_only_layers"] = {7};
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", "mlp_only_layers"});
}

void rejects_unsupported_architecture(void **) {
    json j = llama_config();
    j["architectures"] = {"GPT2LMHeadModel"};
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED,
                 {"config.json", "GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM",
                  "Qwen2ForCausalLM", "Qwen3ForCausalLM"});
    j["architectures"] = json::array();
    expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"architectures", "non-empty array"});
    j = llama_config();
    j["hidden_act"] = "gelu";
    expect_error([&] { parse(j); }, PAGODA_ERR_UNSUPPORTED, {"hidden_act", "gelu"});
}

void rejects_missing_keys(void **) {
    for (const char *key :
         {"architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
          "num_attention_heads", "max_position_embeddings"}) {
        json j = llama_config();
        j.erase(key);
        expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", key, "missing"});
    }
}

void rejects_wrong_types(void **) {
    struct Case {
        const char *key;
        json value;
        const char *expected;
    };
    const Case cases[] = {
        {"hidden_size", "64", "expected an integer"},
        {"hidden_size", 64.5, "expected an integer"},
        {"num_hidden_layers", true, "expected an integer"},
        {"rms_norm_eps", "1e-5", "expected a number"},
        {"rope_theta", json::array(), "expected a number"},
        {"tie_word_embeddings", 1, "expected a boolean"},
        {"eos_token_id", "2", "expected an integer or an array"},
        {"eos_token_id", json::array({2, "3"}), "expected an integer token id"},
        {"bos_token_id", -5, "not a token id"},
        {"rope_scaling", "llama3", "expected an object"},
        {"architectures", "LlamaForCausalLM", "non-empty array of strings"},
        {"hidden_act", 1, "expected a string"},
    };
    for (const Case &c : cases) {
        json j = llama_config();
        j[c.key] = c.value;
        expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", c.key, c.expected});
    }
    expect_error([] { parse_hf_config("{\"hidden_size\": ", "config.json"); }, PAGODA_ERR_FORMAT,
                 {"config.json", "not valid JSON"});
    // Found by fuzz_hf_config: nlohmann reports a number past double's range with out_of_range.
    expect_error([] { parse_hf_config("{\"rope_theta\": 1e400}", "config.json"); },
                 PAGODA_ERR_FORMAT, {"config.json", "not valid JSON", "number overflow"});
    expect_error([] { parse_hf_config("[]", "config.json"); }, PAGODA_ERR_FORMAT,
                 {"config.json", "an array", "expected a JSON object"});
}

void validates_numbers(void **) {
    struct Case {
        const char *key;
        json value;
        const char *fragment;
    };
    const Case cases[] = {
        {"hidden_size", 0, "hidden_size is 0"},
        {"vocab_size", -1, "vocab_size is -1"},
        {"num_hidden_layers", 100000, "n_layers is 100000"},
        {"num_key_value_heads", 3, "not a multiple of n_kv_heads 3"},
        {"num_attention_heads", 5, "hidden_size 64 is not a multiple of num_attention_heads 5"},
        {"head_dim", 15, "head_dim 15 is odd"},
        {"rms_norm_eps", 0, "rms_norm_eps"},
        {"rope_theta", -1, "rope theta"},
        {"eos_token_id", 256, "eos_token_id 256 is not a token"},
        {"max_position_embeddings", 0, "max_position is 0"},
    };
    for (const Case &c : cases) {
        json j = llama_config();
        j[c.key] = c.value;
        expect_error([&] { parse(j); }, PAGODA_ERR_FORMAT, {"config.json", c.fragment});
    }
}

void generation_config_overrides_tokens(void **) {
    ModelConfig c = parse(llama_config());
    apply_hf_generation_config(c, R"({"bos_token_id": 5, "eos_token_id": 7, "temperature": 0.6})",
                               "generation_config.json");
    assert_int_equal(c.bos_token_id, 5);
    assert_true(c.eos_token_ids == std::vector<int32_t>{7});
    apply_hf_generation_config(c, R"({"do_sample": true})", "generation_config.json");
    assert_int_equal(c.bos_token_id, 5);  // absent keys leave the values alone
    expect_error(
        [&] {
            apply_hf_generation_config(c, R"({"eos_token_id": 9999})", "generation_config.json");
        },
        PAGODA_ERR_FORMAT, {"generation_config.json", "eos_token_id 9999"});
    assert_true(c.eos_token_ids == std::vector<int32_t>{7});  // untouched on failure
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_llama3),
        cmocka_unit_test(applies_defaults),
        cmocka_unit_test(reads_rope_scaling_variants),
        cmocka_unit_test(reads_qwen_and_mistral),
        cmocka_unit_test(reads_gemma),
        cmocka_unit_test(reads_mixture_of_experts),
        cmocka_unit_test(rejects_unsupported_architecture),
        cmocka_unit_test(rejects_missing_keys),
        cmocka_unit_test(rejects_wrong_types),
        cmocka_unit_test(validates_numbers),
        cmocka_unit_test(generation_config_overrides_tokens),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
