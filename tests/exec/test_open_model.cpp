// open_model: both formats behind one Model, progress reports, cancellation, and Q8_0 tensors
// widened to F32; open_model_tokenizer: the tokenizer each format carries.
#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/model_tokenizer.hpp"
#include "ggml_vectors.hpp"
#include "gguf_writer.hpp"
#include "model/gguf_file.hpp"
#include "model/gguf_vocabulary.hpp"
#include "model/llama_tensors.hpp"
#include "model/quant_blocks.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"
// Last: it brings cmocka, whose macros clash with the standard library.
#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;

namespace {

std::string exec_model(const std::string &name) {
    return std::string(PAGODA_EXEC_MODELS_DIR) + "/" + name;
}

struct Report {
    double fraction;
    std::string stage;
};

std::vector<Report> open_recording(const std::string &path, std::shared_ptr<const Model> *out) {
    std::vector<Report> reports;
    *out = open_model(
        path,
        [&](double f, const char *stage) {
            reports.push_back({f, stage});
            return true;
        },
        nullptr);
    return reports;
}

void check_progress(const std::vector<Report> &r, const std::string &path) {
    assert_true(r.size() >= 3);
    assert_string_equal(r.front().stage.c_str(), "reading metadata");
    assert_true(r.front().fraction >= 0.0);
    bool paged = false;
    for (size_t i = 0; i < r.size(); ++i) {
        if (r[i].fraction < 0.0 || r[i].fraction > 1.0)
            fail_msg("%s: fraction %g outside [0, 1]", path.c_str(), r[i].fraction);
        if (i > 0 && r[i].fraction < r[i - 1].fraction)
            fail_msg("%s: fraction went back from %g to %g at '%s'", path.c_str(),
                     r[i - 1].fraction, r[i].fraction, r[i].stage.c_str());
        paged = paged || r[i].stage == "paging in weights";
    }
    assert_true(paged);
    assert_true(r.back().fraction == 1.0);
}

uint64_t expected_parameters(const ModelConfig &c) {
    uint64_t n = 0;
    for (const ExpectedTensor &e : llama_expected_tensors(c)) {
        uint64_t k = 1;
        for (int64_t d : e.shape) k *= uint64_t(d);
        n += k;
    }
    return n;
}

void opens_both_formats_with_progress(void **) {
    const std::string hf = exec_model("qwen2_bias_tied_f32") + "/hf";
    const std::string gguf = exec_model("qwen2_bias_tied_f32") + "/model.gguf";
    std::shared_ptr<const Model> a, b;
    check_progress(open_recording(hf, &a), hf);
    check_progress(open_recording(gguf, &b), gguf);

    assert_int_equal(int(a->format()), int(SourceFormat::HuggingFace));
    assert_string_equal(a->source().c_str(), hf.c_str());
    assert_null(a->gguf_vocabulary());
    // Both carry the generator's tokenizer: tokenizer.json in the folder, tokenizer.ggml.* keys.
    const auto ta = engine::open_model_tokenizer(*a), tb = engine::open_model_tokenizer(*b);
    assert_non_null(ta.get());
    assert_non_null(tb.get());
    assert_int_equal(ta->vocab_size(), tb->vocab_size());
    assert_int_equal(int(b->format()), int(SourceFormat::Gguf));
    assert_non_null(b->gguf_vocabulary());
    assert_int_equal(int64_t(b->gguf_vocabulary()->tokens.size()), b->config().vocab_size);
    assert_int_equal(a->parameter_count(), expected_parameters(a->config()));
    assert_int_equal(b->parameter_count(), a->parameter_count());
    assert_true(a->tensors().all().size() == b->tensors().all().size());
    // No progress callback and no flag: still opens.
    assert_non_null(open_model(hf, {}, nullptr).get());
}

void cancels(void **) {
    const std::string gguf = exec_model("llama_gqa_f32") + "/model.gguf";
    const std::string hf = exec_model("llama_gqa_f32") + "/hf";
    for (const std::string &path : {gguf, hf}) {
        // The callback says no at the first report, and again once paging has begun.
        test::expect_error(
            [&] {
                open_model(
                    path, [](double, const char *) { return false; }, nullptr);
            },
            PAGODA_ERR_CANCELLED, {path.c_str(), "cancelled"});
        test::expect_error(
            [&] {
                open_model(
                    path,
                    [](double, const char *stage) {
                        return std::strcmp(stage, "paging in weights") != 0;
                    },
                    nullptr);
            },
            PAGODA_ERR_CANCELLED, {path.c_str(), "cancelled"});
        // The flag, set before and set while paging in.
        std::atomic<bool> flag{true};
        test::expect_error([&] { open_model(path, {}, &flag); }, PAGODA_ERR_CANCELLED,
                           {path.c_str()});
        flag = false;
        int after = 0;
        test::expect_error(
            [&] {
                open_model(
                    path,
                    [&](double, const char *stage) {
                        if (std::strcmp(stage, "paging in weights") == 0) {
                            flag = true;
                            ++after;
                        }
                        return true;
                    },
                    &flag);
            },
            PAGODA_ERR_CANCELLED, {path.c_str()});
        // Stopped at the report after the flag was set: the callback saw one paging report.
        assert_int_equal(after, 1);
    }
    test::expect_error([] { open_model("/nonexistent/model.gguf", {}, nullptr); },
                       PAGODA_ERR_NOT_FOUND, {"/nonexistent/model.gguf"});
}

// The metadata of a one-layer llama of width `hidden` (2 heads, 1 KV head, vocab 8); the tensors
// are the caller's.
test::GgufWriter one_layer_llama(uint32_t hidden, uint32_t ffn) {
    test::GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.context_length", 64);
    w.add_u32("llama.embedding_length", hidden);
    w.add_u32("llama.block_count", 1);
    w.add_u32("llama.feed_forward_length", ffn);
    w.add_u32("llama.attention.head_count", 2);
    w.add_u32("llama.attention.head_count_kv", 1);
    w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.add_u32("llama.vocab_size", 8);
    return w;
}

// A one-layer llama (hidden 32, 2 heads of 16, 1 KV head, FFN 64, vocab 8) whose q_proj and
// down_proj are Q8_0, with blocks of varied scales and values: kept as Q8_0, no widening stage.
void keeps_q8_0(void **) {
    test::GgufWriter w = one_layer_llama(32, 64);
    constexpr uint32_t kQ8_0 = 8;
    w.add_f32_tensor("token_embd.weight", {32, 8});
    w.add_f32_tensor("blk.0.attn_norm.weight", {32});
    w.add_tensor("blk.0.attn_q.weight", {32, 32}, kQ8_0, 32 * 34);
    w.add_f32_tensor("blk.0.attn_k.weight", {32, 16});
    w.add_f32_tensor("blk.0.attn_v.weight", {32, 16});
    w.add_f32_tensor("blk.0.attn_output.weight", {32, 32});
    w.add_f32_tensor("blk.0.ffn_norm.weight", {32});
    w.add_f32_tensor("blk.0.ffn_gate.weight", {32, 64});
    w.add_f32_tensor("blk.0.ffn_up.weight", {32, 64});
    w.add_tensor("blk.0.ffn_down.weight", {64, 32}, kQ8_0, 64 * 34);
    w.add_f32_tensor("output_norm.weight", {32});
    w.add_f32_tensor("output.weight", {32, 8});

    test::TempDir dir;
    const std::string path = dir.file("q8.gguf");
    test::Bytes bytes = w.bytes();
    // Fill the Q8_0 blocks: scale bit patterns (0.5, 0.25, ~0.1, -0.5, 2^-14, 1.5) and q values
    // spanning int8.
    const uint16_t scales[] = {0x3800, 0x3400, 0x2E66, 0xB800, 0x0400, 0x3E00};
    struct Patch {
        std::string gguf_name, canonical;
        uint64_t blocks;
    };
    const Patch patches[] = {{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 32},
                             {"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 64}};
    dir.write("q8.gguf", bytes);
    std::vector<uint64_t> offsets;
    {
        const GgufFile file(path);
        for (const Patch &p : patches)
            offsets.push_back(file.data_offset() + file.find_tensor(p.gguf_name)->offset);
    }
    for (size_t t = 0; t < 2; ++t)
        for (uint64_t b = 0; b < patches[t].blocks; ++b) {
            unsigned char *block = bytes.data() + offsets[t] + b * 34;
            const uint16_t s = scales[(b + t) % 6];
            std::memcpy(block, &s, 2);
            for (int i = 0; i < 32; ++i)
                block[2 + i] = (unsigned char)int8_t(int(b * 7 + i * 9) % 256 - 128);
        }
    dir.write("q8.gguf", bytes);

    std::shared_ptr<const Model> m;
    const std::vector<Report> reports = open_recording(path, &m);
    check_progress(reports, path);
    for (const Report &r : reports) assert_true(r.stage != "widening quantized weights");

    for (size_t t = 0; t < 2; ++t) {
        // Kept as the file stores it: the mapped blocks themselves.
        const TensorRef &ref = m->tensors().require(patches[t].canonical, path);
        assert_int_equal(int(ref.type), int(TensorType::Q8_0));
        assert_int_equal(ref.bytes, patches[t].blocks * 34);
        std::vector<float> v(patches[t].blocks * 32);
        dequantize(ref.type, ref.data, v.size(), v.data());
        for (uint64_t b = 0; b < patches[t].blocks; ++b) {
            const float d = test::f16_to_float(scales[(b + t) % 6]);
            for (int i = 0; i < 32; ++i) {
                const float want = d * float(int8_t(int(b * 7 + i * 9) % 256 - 128));
                const float got = v[b * 32 + uint64_t(i)];
                if (got != want)
                    fail_msg("%s: block %llu value %d is %g, want %g", patches[t].canonical.c_str(),
                             (unsigned long long)b, i, double(got), double(want));
            }
        }
    }
    // Q8_0 counts its values, not its bytes.
    assert_int_equal(m->parameter_count(), expected_parameters(m->config()));
    // Untouched tensors still point into the file.
    assert_int_equal(int(m->tensors().require("model.layers.0.self_attn.k_proj.weight", path).type),
                     int(TensorType::F32));
}

// A one-layer llama of width 256 whose projections come in every quantized type, filled with
// blocks ggml made (tests/fixtures/quant): the model keeps each tensor in its type, and its
// blocks decode to the values ggml decodes them to, bit for bit.
void keeps_every_quantized_type(void **) {
    struct Quantized {
        const char *gguf_name, *canonical;
        uint64_t rows;  // of 256 values
        uint32_t ggml_id;
    };
    const Quantized quantized[] = {
        {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 256, 12},    // Q4_K
        {"blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 128, 13},    // Q5_K
        {"blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", 128, 14},    // Q6_K
        {"blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", 256, 2},  // Q4_0
        {"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 256, 8}};    // Q8_0
    const auto vectors = test::read_ggml_vectors(PAGODA_FIXTURES_DIR "/quant/ggml_vectors.bin");
    const auto bytes_of = [&](const Quantized &q) {
        const test::GgmlVectors &v = vectors.at(q.ggml_id);
        return q.rows * 256 / v.block_elements * v.block_bytes;
    };

    test::GgufWriter w = one_layer_llama(256, 256);
    w.add_f32_tensor("token_embd.weight", {256, 8});
    w.add_f32_tensor("blk.0.attn_norm.weight", {256});
    w.add_f32_tensor("blk.0.ffn_norm.weight", {256});
    w.add_f32_tensor("blk.0.ffn_gate.weight", {256, 256});
    w.add_f32_tensor("blk.0.ffn_up.weight", {256, 256});
    w.add_f32_tensor("output_norm.weight", {256});
    w.add_f32_tensor("output.weight", {256, 8});
    for (const Quantized &q : quantized) w.add_tensor(q.gguf_name, {256, q.rows}, q.ggml_id, bytes_of(q));

    // Each tensor's blocks are ggml's blocks of its type, over and over.
    test::TempDir dir;
    const std::string path = dir.file("quantized.gguf");
    test::Bytes bytes = w.bytes();
    dir.write("quantized.gguf", bytes);
    {
        const GgufFile file(path);
        for (const Quantized &q : quantized) {
            const std::vector<unsigned char> &blocks = vectors.at(q.ggml_id).blocks;
            unsigned char *data = bytes.data() + file.data_offset() + file.find_tensor(q.gguf_name)->offset;
            for (uint64_t i = 0; i < bytes_of(q); ++i) data[i] = blocks[i % blocks.size()];
        }
    }
    dir.write("quantized.gguf", bytes);

    std::shared_ptr<const Model> m;
    const std::vector<Report> reports = open_recording(path, &m);
    check_progress(reports, path);
    for (const Quantized &q : quantized) {
        const TensorRef &ref = m->tensors().require(q.canonical, path);
        const std::vector<float> &want = vectors.at(q.ggml_id).values;
        TensorType type = TensorType::F32;
        for (const test::GgmlQuantType &g : test::kGgmlQuantTypes)
            if (g.ggml_id == q.ggml_id) type = g.type;
        assert_int_equal(int(ref.type), int(type));
        assert_int_equal(ref.bytes, bytes_of(q));
        std::vector<float> got(q.rows * 256);
        dequantize(ref.type, ref.data, got.size(), got.data());
        for (uint64_t i = 0; i < q.rows * 256; ++i)
            if (std::memcmp(&got[i], &want[i % want.size()], 4) != 0)
                fail_msg("%s value %llu is %.9g, ggml decodes %.9g", q.canonical,
                         (unsigned long long)i, double(got[i]), double(want[i % want.size()]));
    }
    assert_int_equal(m->parameter_count(), expected_parameters(m->config()));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_both_formats_with_progress),
        cmocka_unit_test(cancels),
        cmocka_unit_test(keeps_q8_0),
        cmocka_unit_test(keeps_every_quantized_type),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
