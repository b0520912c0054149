// hf_checkpoint: Hugging Face folders that make_random_model.py generated, and broken ones.
#include "model/hf_checkpoint.hpp"

#include "model/hf_config.hpp"
#include "model/llama_tensors.hpp"
#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;
using nlohmann::json;
using pagoda::test::expect_error;
using pagoda::test::F32Tensor;
using pagoda::test::TempDir;

namespace {

float stored_value(const TensorRef &t, size_t i) {
    switch (t.type) {
    case TensorType::F32: return static_cast<const float *>(t.data)[i];
    case TensorType::F16: return test::f16_to_float(static_cast<const uint16_t *>(t.data)[i]);
    case TensorType::BF16: return test::bf16_to_float(static_cast<const uint16_t *>(t.data)[i]);
    default: fail_msg("%s: not a float tensor", t.name.c_str());
    }
    return 0;
}

// Every tensor of the config is there with its shape, and samples.json's values read back.
void check_generated(const HfCheckpoint &ck, const std::string &dir, TensorType type) {
    for (const ExpectedTensor &want : llama_expected_tensors(ck.config())) {
        const TensorRef &t = ck.tensors().require(want.name, dir);
        assert_true(t.shape == want.shape);
        assert_int_equal(int(t.type), int(type));
    }
    const json samples = test::read_json(dir + "/samples.json");
    for (const auto &[name, values] : samples.items()) {
        const TensorRef &t = ck.tensors().require(name, dir);
        for (size_t i = 0; i < values.size(); ++i)
            if (stored_value(t, i) != values[i].get<float>())
                fail_msg("%s[%zu] = %g, generator wrote %g", name.c_str(), i, stored_value(t, i),
                         values[i].get<double>());
    }
}

void opens_llama(void **) {
    const std::string dir = test::random_model("llama_f32");
    const HfCheckpoint ck(dir + "/hf/");
    const ModelConfig &c = ck.config();
    assert_int_equal(int(c.architecture), int(Architecture::Llama));
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.intermediate_size, 128);
    assert_int_equal(c.n_layers, 2);
    assert_int_equal(c.n_heads, 4);
    assert_int_equal(c.n_kv_heads, 2);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.vocab_size, 96);
    assert_int_equal(c.bos_token_id, 1);
    assert_true(c.eos_token_ids == std::vector<int32_t>{2});  // from generation_config.json
    assert_int_equal(ck.shards().size(), 1);
    assert_non_null(ck.tensors().find("lm_head.weight"));
    check_generated(ck, dir, TensorType::F32);
}

void opens_sharded_llama3(void **) {
    const std::string dir = test::random_model("llama_sharded_bf16");
    const HfCheckpoint ck(dir + "/hf");
    assert_int_equal(ck.shards().size(), 3);
    const RopeConfig &rope = ck.config().rope;
    assert_int_equal(rope.scaling, PAGODA_ROPE_SCALING_LLAMA3);
    assert_true(rope.theta == 500000.0);
    assert_true(rope.factor == 8.0);
    assert_int_equal(rope.original_max_position, 1024);
    // Tensors from every shard, each naming its own file.
    std::set<std::string> files;
    for (const auto &[name, t] : ck.tensors().all()) files.insert(t.file);
    assert_int_equal(files.size(), 3);
    check_generated(ck, dir, TensorType::BF16);
}

void opens_tied_qwen2(void **) {
    const std::string dir = test::random_model("qwen2_tied_f16");
    const HfCheckpoint ck(dir + "/hf");
    const ModelConfig &c = ck.config();
    assert_int_equal(int(c.architecture), int(Architecture::Qwen2));
    assert_true(c.tie_word_embeddings);
    assert_true(c.attention_bias);
    assert_null(ck.tensors().find("lm_head.weight"));
    const TensorRef &k_bias = ck.tensors().require("model.layers.1.self_attn.k_proj.bias", dir);
    assert_true(k_bias.shape == std::vector<int64_t>{c.n_kv_heads * c.head_dim});
    check_generated(ck, dir, TensorType::F16);
}

void opens_mistral_with_explicit_head_dim(void **) {
    const std::string dir = test::random_model("mistral_head_dim");
    const HfCheckpoint ck(dir + "/hf");
    const ModelConfig &c = ck.config();
    assert_int_equal(int(c.architecture), int(Architecture::Mistral));
    assert_int_equal(c.head_dim, 32);
    assert_int_equal(c.sliding_window, 256);
    assert_true(ck.tensors().require("model.layers.0.self_attn.q_proj.weight", dir).shape ==
                (std::vector<int64_t>{128, 64}));
    check_generated(ck, dir, TensorType::F32);
}

// --- broken folders, built in a temporary folder -------------------------------------------------

const char *kTinyConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "max_position_embeddings": 64, "vocab_size": 16})";

std::vector<F32Tensor> tiny_tensors() {
    std::vector<F32Tensor> list;
    for (const ExpectedTensor &t :
         llama_expected_tensors(parse_hf_config(kTinyConfig, "config.json")))
        list.push_back({t.name, t.shape});
    return list;
}

void remove_tensor(std::vector<F32Tensor> &list, const std::string &name) {
    std::erase_if(list, [&](const F32Tensor &t) { return t.name == name; });
}

void opens_tiny_folder(void **) {
    TempDir dir;
    dir.write("config.json", kTinyConfig);
    dir.write("model.safetensors", test::safetensors_of(tiny_tensors()));
    const HfCheckpoint ck(dir.path());
    assert_int_equal(ck.tensors().all().size(), tiny_tensors().size());
}

void rejects_missing_files(void **) {
    TempDir dir;
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_NOT_FOUND,
                 {dir.path().c_str(), "no config.json"});
    dir.write("config.json", kTinyConfig);
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_NOT_FOUND,
                 {dir.path().c_str(), "no weights", "model.safetensors.index.json"});
    dir.write("generation_config.json", "{\"eos_token_id\": true}");
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {"generation_config.json", "eos_token_id"});
}

void rejects_missing_tensor(void **) {
    TempDir dir;
    dir.write("config.json", kTinyConfig);
    auto list = tiny_tensors();
    remove_tensor(list, "model.layers.0.mlp.up_proj.weight");
    dir.write("model.safetensors", test::safetensors_of(list));
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {dir.path().c_str(), "'model.layers.0.mlp.up_proj.weight'", "missing", "[16, 8]"});
    // Untied, so lm_head is required too.
    list = tiny_tensors();
    remove_tensor(list, "lm_head.weight");
    dir.write("model.safetensors", test::safetensors_of(list));
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT, {"'lm_head.weight'"});
}

// A tensor the config does not explain (a Gemma 3 Q norm beside a config that says Llama) would be
// a layer left out: refused by name. Old Llama RoPE tables and a tied model's stored LM head are
// left alone, as transformers leaves them.
void rejects_unexpected_tensor(void **) {
    TempDir dir;
    dir.write("config.json", kTinyConfig);
    auto list = tiny_tensors();
    list.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {2}});
    dir.write("model.safetensors", test::safetensors_of(list));
    HfCheckpoint ok(dir.path());
    list.push_back({"model.layers.0.self_attn.q_norm.weight", {4}});
    dir.write("model.safetensors", test::safetensors_of(list));
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {"model.safetensors", "'model.layers.0.self_attn.q_norm.weight'", "does not belong"});
}

void rejects_wrong_shape(void **) {
    TempDir dir;
    dir.write("config.json", kTinyConfig);
    auto list = tiny_tensors();
    for (auto &t : list)
        if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {8, 8};  // not [4, 8]
    dir.write("model.safetensors", test::safetensors_of(list));
    expect_error(
        [&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
        {"model.safetensors", "'model.layers.0.self_attn.k_proj.weight'", "[8, 8]", "[4, 8]"});
}

// Writes the tiny model's tensors as two shards and an index saying where each one is.
void write_sharded(const TempDir &dir, const std::vector<F32Tensor> &first,
                   const std::vector<F32Tensor> &second, const json &weight_map) {
    dir.write("config.json", kTinyConfig);
    dir.write("a.safetensors", test::safetensors_of(first));
    dir.write("b.safetensors", test::safetensors_of(second));
    dir.write("model.safetensors.index.json", json{{"weight_map", weight_map}}.dump());
}

void sharded_case(const std::vector<F32Tensor> &all, size_t split, json &map,
                  std::vector<F32Tensor> &first, std::vector<F32Tensor> &second) {
    first.assign(all.begin(), all.begin() + long(split));
    second.assign(all.begin() + long(split), all.end());
    map = json::object();
    for (const auto &t : first) map[t.name] = "a.safetensors";
    for (const auto &t : second) map[t.name] = "b.safetensors";
}

void rejects_broken_shards(void **) {
    const auto all = tiny_tensors();
    std::vector<F32Tensor> first, second;
    json map;
    TempDir dir;

    sharded_case(all, 5, map, first, second);
    write_sharded(dir, first, second, map);
    assert_int_equal(HfCheckpoint(dir.path()).shards().size(), 2);  // the valid layout opens

    // A shard the index lists is not there.
    map["model.norm.weight"] = "c.safetensors";
    write_sharded(dir, first, second, map);
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_NOT_FOUND,
                 {"model.safetensors.index.json", "c.safetensors"});

    // One tensor in both shards.
    sharded_case(all, 5, map, first, second);
    second.push_back(first[0]);
    write_sharded(dir, first, second, map);
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {("'" + first[0].name + "'").c_str(), "a.safetensors", "b.safetensors", "both"});

    // The index puts a tensor in a shard that does not hold it.
    sharded_case(all, 5, map, first, second);
    map[first[1].name] = "b.safetensors";
    write_sharded(dir, first, second, map);
    expect_error(
        [&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
        {"model.safetensors.index.json", ("'" + first[1].name + "'").c_str(), "b.safetensors"});

    // Shard names must stay inside the folder.
    sharded_case(all, 5, map, first, second);
    map[first[1].name] = "../a.safetensors";
    write_sharded(dir, first, second, map);
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {"model.safetensors.index.json", "not the file name of a shard"});

    dir.write("model.safetensors.index.json", std::string("{\"weight_map\": 3}"));
    expect_error([&] { HfCheckpoint ck(dir.path()); }, PAGODA_ERR_FORMAT,
                 {"model.safetensors.index.json", "weight_map"});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_llama),
        cmocka_unit_test(opens_sharded_llama3),
        cmocka_unit_test(opens_tied_qwen2),
        cmocka_unit_test(opens_mistral_with_explicit_head_dim),
        cmocka_unit_test(opens_tiny_folder),
        cmocka_unit_test(rejects_missing_files),
        cmocka_unit_test(rejects_missing_tensor),
        cmocka_unit_test(rejects_unexpected_tensor),
        cmocka_unit_test(rejects_wrong_shape),
        cmocka_unit_test(rejects_broken_shards),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
