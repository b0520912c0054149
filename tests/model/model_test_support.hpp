// Helpers for the safetensors and Hugging Face tests: asserting on pagoda::Error, temporary
// folders, safetensors images built in memory, and the generated random models.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "model/model_config.hpp"

// Last: cmocka defines macros (fail, ...) that clash with the C++ library; it needs these first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

namespace pagoda::test {

using Bytes = std::vector<unsigned char>;

// Runs `f`, which must throw Error with `status` and a message containing every fragment.
template <class F>
void expect_error(F &&f, pagoda_status_t status, std::initializer_list<const char *> fragments) {
    try {
        f();
    } catch (const Error &e) {
        if (e.status() != status)
            fail_msg("status %d, expected %d: %s", int(e.status()), int(status), e.what());
        for (const char *s : fragments)
            if (std::strstr(e.what(), s) == nullptr)
                fail_msg("message \"%s\" does not mention \"%s\"", e.what(), s);
        return;
    }
    fail_msg("no error thrown; expected status %d", int(status));
}

// A safetensors image: the 8-byte length (of `header`, unless `declared` is given), the header
// text, and `data` bytes of a counting pattern.
inline Bytes safetensors_image(const std::string &header, size_t data,
                               uint64_t declared = UINT64_MAX) {
    const uint64_t length = declared == UINT64_MAX ? header.size() : declared;
    Bytes b;
    for (int i = 0; i < 8; ++i) b.push_back((unsigned char)(length >> (8 * i)));
    b.insert(b.end(), header.begin(), header.end());
    for (size_t i = 0; i < data; ++i) b.push_back((unsigned char)i);
    return b;
}

struct F32Tensor {
    std::string name;
    std::vector<int64_t> shape;
};

// A valid image of zero-filled F32 tensors laid out one after another.
inline Bytes safetensors_of(const std::vector<F32Tensor> &tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto &t : tensors) {
        uint64_t n = 4;
        for (int64_t d : t.shape) n *= uint64_t(d);
        header[t.name] = {
            {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
        offset += n;
    }
    Bytes b = safetensors_image(header.dump(), 0);
    b.resize(b.size() + offset, 0);
    return b;
}

// A fresh folder under the system's temporary folder, removed with the object.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "pagoda-test-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) fail_msg("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    std::string path() const { return path_.string(); }
    std::string file(const std::string &name) const { return (path_ / name).string(); }
    void write(const std::string &name, const std::string &text) const {
        std::ofstream(path_ / name, std::ios::binary) << text;
    }
    void write(const std::string &name, const Bytes &bytes) const {
        std::ofstream(path_ / name, std::ios::binary)
            .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    }

private:
    std::filesystem::path path_;
};

// A model make_random_model.py wrote for this test run (CTest fixture random_models).
inline std::string random_model(const std::string &name) {
    return std::string(PAGODA_RANDOM_MODELS_DIR) + "/" + name;
}

// Two readings of one model's config (a Hugging Face folder's and a GGUF file's) agree on what
// both formats carry. EOS ids are left to the caller (GGUF holds one, config.json a list), and so
// is RoPE scaling (GGUF carries Llama 3's as a tensor of factors).
inline void expect_same_config(const model::ModelConfig &a, const model::ModelConfig &b) {
    assert_int_equal(int(a.architecture == model::Architecture::Qwen2), int(b.architecture == model::Architecture::Qwen2));
    assert_int_equal(a.vocab_size, b.vocab_size);
    assert_int_equal(a.hidden_size, b.hidden_size);
    assert_int_equal(a.intermediate_size, b.intermediate_size);
    assert_int_equal(a.n_layers, b.n_layers);
    assert_int_equal(a.n_heads, b.n_heads);
    assert_int_equal(a.n_kv_heads, b.n_kv_heads);
    assert_int_equal(a.head_dim, b.head_dim);
    assert_int_equal(a.max_position, b.max_position);
    assert_true(float(a.rms_norm_eps) == float(b.rms_norm_eps));  // GGUF stores f32
    assert_true(float(a.rope.theta) == float(b.rope.theta));
    assert_int_equal(int(a.tie_word_embeddings), int(b.tie_word_embeddings));
    assert_int_equal(int(a.attention_bias), int(b.attention_bias));
    assert_int_equal(a.bos_token_id, b.bos_token_id);
    // The other architectures' layers. (Gemma's norm offset lives in the weights of a GGUF and
    // in the config of a folder, and its embedding scale rounds to a half checkpoint's type.)
    assert_int_equal(int(a.qk_norm), int(b.qk_norm));
    assert_int_equal(int(a.sandwich_norms), int(b.sandwich_norms));
    assert_int_equal(int(a.mlp_activation), int(b.mlp_activation));
    assert_int_equal(int(a.embedding_scale != 0), int(b.embedding_scale != 0));
    assert_true(float(a.attention_scale()) == float(b.attention_scale()));
    assert_true(float(a.attn_logit_softcap) == float(b.attn_logit_softcap));
    assert_true(float(a.final_logit_softcap) == float(b.final_logit_softcap));
    for (int64_t layer = 0; layer < a.n_layers; ++layer) {
        assert_int_equal(a.window_of(layer), b.window_of(layer));
        assert_true(float(a.rope_of(layer).theta) == float(b.rope_of(layer).theta));
        // (GGUF carries Llama 3's scaling as rope_freqs.weight, not as a scaling type.)
        if (a.rope_of(layer).scaling != PAGODA_ROPE_SCALING_LLAMA3)
            assert_int_equal(int(a.rope_of(layer).scaling), int(b.rope_of(layer).scaling));
    }
}

inline nlohmann::json read_json(const std::string &path) {
    std::ifstream in(path);
    if (!in)
        fail_msg("cannot open %s (run through ctest so the fixtures are generated)", path.c_str());
    return nlohmann::json::parse(in);
}

// Stored values back to float, for comparing with samples.json.
inline float f16_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(float(mant), -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = std::ldexp(float(mant | 0x400), int(exp) - 25);
    return sign ? -v : v;
}

inline float bf16_to_float(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

}  // namespace pagoda::test
