// Quantizing a Hugging Face folder (make_random_model.py's hf/) must give the file quantizing the
// same model's GGUF (as llama.cpp's converter writes it) gives: the same tensors bit for bit and
// the same metadata, for every type; a tokenizer that encodes as the folder's tokenizer.json does;
// and a file Pagoda's GGUF loader describes as the folder's config. Bad folders are refused
// before anything is written.
#include <map>

#include "engine/model_quantize.hpp"
#include "model/gguf_model.hpp"
#include "model/hf_checkpoint.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/tokenizer.hpp"
#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;

namespace {

constexpr QuantMix kMixes[] = {QuantMix::Q8_0, QuantMix::Q4_0, QuantMix::Q4_K_M, QuantMix::Q5_K_M, QuantMix::Q6_K};

// Keys the two sources may differ in: the name (the GGUF fixture's own; the folder's name).
bool compared(const std::string &key) { return key != "general.name"; }

void expect_same_file(const std::string &from_gguf, const std::string &from_hf) {
    const GgufFile a(from_gguf), b(from_hf);
    for (const auto &[key, value] : a.metadata()) {
        if (!compared(key)) continue;
        const GgufValue *other = b.find(key);
        if (other == nullptr) fail_msg("%s: key %s missing", from_hf.c_str(), key.c_str());
        if (other->type != value.type || other->bytes.size() != value.bytes.size() ||
            std::memcmp(other->bytes.data(), value.bytes.data(), value.bytes.size()) != 0)
            fail_msg("%s: key %s differs", from_hf.c_str(), key.c_str());
    }
    for (const auto &[key, value] : b.metadata())
        if (compared(key) && !a.has(key)) fail_msg("%s: extra key %s", from_hf.c_str(), key.c_str());
    assert_true(b.has("general.name"));

    assert_int_equal(a.tensors().size(), b.tensors().size());
    for (const GgufTensor &t : a.tensors()) {
        const GgufTensor *u = b.find_tensor(t.name);
        if (u == nullptr) fail_msg("%s: tensor %s missing", from_hf.c_str(), t.name.c_str());
        assert_true(u->dims == t.dims);
        assert_int_equal(u->ggml_type, t.ggml_type);
        assert_int_equal(u->bytes, t.bytes);
        if (std::memcmp(u->data, t.data, t.bytes) != 0)
            fail_msg("%s: tensor %s differs from the GGUF source's", from_hf.c_str(), t.name.c_str());
    }
}

void expect_same_tokenizer(const std::string &hf_folder, const std::string &quantized) {
    const auto hf = tok::Tokenizer::from_file(hf_folder);
    const GgufModel m = open_gguf_model(quantized);
    const auto gguf = tok::Tokenizer::from_gguf(m.vocabulary, quantized);
    for (const char *text : {"Once upon a time, there was a little girl", "Hello world!", "  spaces\tand\nlines ",
                             "Gr\xC3\xBC\xC3\x9F" "e \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x9A\x80", ""}) {
        for (uint32_t flags : {0u, PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL}) {
            const std::vector<int32_t> want = hf->encode(text, flags);
            if (gguf->encode(text, flags) != want) fail_msg("%s: \"%s\" encodes differently", quantized.c_str(), text);
            assert_true(gguf->decode(want, 0) == hf->decode(want, 0));
        }
    }
    assert_int_equal(gguf->bos_token_id(), m.config.bos_token_id);

    // The loader's view of the file is the folder's config.
    const HfCheckpoint checkpoint(hf_folder);
    const ModelConfig &a = checkpoint.config(), &b = m.config;
    test::expect_same_config(a, b);
    assert_int_equal(a.sliding_window, b.sliding_window);
    assert_int_equal(a.eos_token_ids.front(), b.eos_token_ids.front());
}

void check_model(const std::string &name) {
    const std::string dir = test::random_model(name);
    const test::TempDir out;
    for (QuantMix mix : kMixes) {
        const std::string a = out.file("from_gguf.gguf"), b = out.file("from_hf.gguf");
        engine::quantize_model(dir + "/model.gguf", a, mix, 2, {});
        engine::quantize_model(dir + "/hf", b, mix, 2, {});
        expect_same_file(a, b);
        if (mix == QuantMix::Q8_0) expect_same_tokenizer(dir + "/hf", b);
    }
}

void test_llama_spm(void **) { check_model("llama_256_f16"); }
void test_llama_sharded_llama3_rope(void **) { check_model("llama_sharded_bf16"); }
void test_qwen2_tied_biases(void **) { check_model("qwen2_tied_f16"); }
void test_mistral_head_dim(void **) { check_model("mistral_head_dim"); }
void test_llama_byte_level(void **) { check_model("llama_bpe"); }
void test_qwen2_byte_level(void **) { check_model("qwen2_bpe"); }
void test_qwen3_head_norms(void **) { check_model("qwen3_bpe"); }
void test_gemma2(void **) { check_model("gemma2_bf16"); }
void test_gemma3(void **) { check_model("gemma3_bf16"); }
void test_phi3_longrope(void **) { check_model("phi3_longrope"); }
void test_mixtral(void **) { check_model("mixtral_bf16"); }
void test_qwen3moe(void **) { check_model("qwen3moe_f16"); }

// A copy of a random model's folder to break.
std::string copy_folder(const test::TempDir &tmp, const std::string &model) {
    const std::string to = tmp.file("hf");
    std::filesystem::copy(test::random_model(model) + "/hf", to, std::filesystem::copy_options::recursive);
    return to;
}

void expect_refused(const std::string &folder, pagoda_status_t status, std::initializer_list<const char *> fragments) {
    const std::string output = folder + "/../out.gguf";
    test::expect_error([&] { engine::quantize_model(folder, output, QuantMix::Q8_0, 1, {}); }, status, fragments);
    assert_false(std::filesystem::exists(output));
    assert_false(std::filesystem::exists(output + ".partial"));
}

void test_bad_folders(void **) {
    {  // GGUF's qwen3moe keys imply renormalised expert weights.
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "qwen3moe_f16");
        nlohmann::json c = test::read_json(f + "/config.json");
        c["norm_topk_prob"] = false;
        tmp.write("hf/config.json", c.dump());
        expect_refused(f, PAGODA_ERR_UNSUPPORTED, {"config.json", "norm_topk_prob"});
    }
    {
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        std::filesystem::remove(f + "/tokenizer.json");
        expect_refused(f, PAGODA_ERR_NOT_FOUND, {"tokenizer.json"});
    }
    {
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        std::filesystem::remove(f + "/model.safetensors");
        expect_refused(f, PAGODA_ERR_NOT_FOUND, {"model.safetensors"});
    }
    {
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        nlohmann::json c = test::read_json(f + "/config.json");
        c["architectures"] = {"GPT2LMHeadModel"};
        tmp.write("hf/config.json", c.dump());
        expect_refused(f, PAGODA_ERR_UNSUPPORTED, {"config.json", "GPT2LMHeadModel"});
    }
    {
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        tmp.write("hf/config.json", std::string("{\"architectures\": [\"LlamaForCausalLM\"], "));
        expect_refused(f, PAGODA_ERR_FORMAT, {"config.json"});
    }
    {  // A tokenizer with fewer... more tokens than the embedding has rows.
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        nlohmann::json t = test::read_json(f + "/tokenizer.json");
        t["model"]["vocab"]["\xE2\x96\x81" "extra"] = 96;
        tmp.write("hf/tokenizer.json", t.dump());
        expect_refused(f, PAGODA_ERR_FORMAT, {"tokenizer.json", "96", "vocab_size"});
    }
    {  // A pre-tokenizer llama.cpp has no name for.
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_bpe");
        nlohmann::json t = test::read_json(f + "/tokenizer.json");
        t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+|\\w+";
        tmp.write("hf/tokenizer.json", t.dump());
        expect_refused(f, PAGODA_ERR_UNSUPPORTED, {"tokenizer.json", "pre_tokenizer"});
    }
    {  // Added tokens that eat the spaces around them.
        const test::TempDir tmp;
        const std::string f = copy_folder(tmp, "llama_f32");
        nlohmann::json t = test::read_json(f + "/tokenizer.json");
        t["added_tokens"][1]["rstrip"] = true;
        tmp.write("hf/tokenizer.json", t.dump());
        expect_refused(f, PAGODA_ERR_UNSUPPORTED, {"tokenizer.json", "added_tokens[1]", "rstrip"});
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_spm),
        cmocka_unit_test(test_llama_sharded_llama3_rope),
        cmocka_unit_test(test_qwen2_tied_biases),
        cmocka_unit_test(test_mistral_head_dim),
        cmocka_unit_test(test_llama_byte_level),
        cmocka_unit_test(test_qwen2_byte_level),
        cmocka_unit_test(test_qwen3_head_norms),
        cmocka_unit_test(test_gemma2),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_phi3_longrope),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_qwen3moe),
        cmocka_unit_test(test_bad_folders),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
