// LlamaForward on the CPU backend against a plain double-precision reference forward
// (reference_forward.hpp): random Llama, Qwen2, Qwen3 and Mistral models in both formats, prefill and
// decode across paged blocks in shuffled order, mixed batches, GGUF against safetensors, and the
// real stories260K model's greedy continuation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/llama_forward.hpp"
#include "model/gguf_quantize.hpp"
#include "model/model.hpp"
#include "model/quant_blocks.hpp"
#include "runtime/device.hpp"
// Test headers last: they bring cmocka, whose macros clash with the standard library.
#include "paged_test_cache.hpp"
#include "reference_forward.hpp"

using namespace pagoda;
using pagoda::test::BatchPiece;
using pagoda::test::PagedTestCache;
using pagoda::test::ReferenceModel;

namespace {

// Normwise relative error of one row of logits: max |got − ref| / max |ref|.
double row_error(const float *got, const std::vector<double> &ref) {
    double diff = 0, top = 1e-30;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = std::fabs(double(got[i]) - ref[i]);
        diff = std::isnan(d) ? INFINITY : std::max(diff, d);
        top = std::max(top, std::fabs(ref[i]));
    }
    return diff / top;
}

int32_t argmax(const float *x, int64_t n) {
    return int32_t(std::max_element(x, x + n) - x);
}

// Everything one forward pass needs, on the CPU backend.
struct Harness {
    Harness(const std::string &path, int32_t block_size, pagoda_dtype_t kv_dtype = PAGODA_DTYPE_F32,
            pagoda_dtype_t act_dtype = PAGODA_DTYPE_F32)
        : device(test::cpu_backend(), 0),
          stream(device),
          model(model::open_model(path, {}, nullptr)),
          forward(model, stream),
          cache(device, model->config(), block_size, 64, 7, kv_dtype) {
        forward.set_activation_dtype(act_dtype);
    }

    // Runs the batch of `pieces`; returns the logits of its logit rows.
    std::vector<float> run(const std::vector<BatchPiece> &pieces) {
        const exec::ForwardBatch b = test::make_batch(cache, pieces);
        std::vector<float> logits(b.logit_rows.size() * size_t(vocab()));
        forward.run(b, cache.geometry, cache.pools, logits.data());
        return logits;
    }
    int64_t vocab() const { return model->config().vocab_size; }

    runtime::Device device;
    runtime::Stream stream;
    std::shared_ptr<const model::Model> model;
    exec::LlamaForward forward;
    PagedTestCache cache;
};

std::vector<int32_t> prompt(int64_t vocab, size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t;
    for (size_t i = 0; i < n; ++i) t.push_back(int32_t(rng() % uint32_t(vocab)));
    return t;
}

constexpr double kTolerance = 1e-4;
constexpr int kDecodeSteps = 6;

// A 13-token prompt (logits for every row), then decode steps feeding back each argmax: every
// row against the reference on `reference_path`'s weights.
void prefill_then_decode(const std::string &path, const std::string &reference_path,
                         int32_t block_size, pagoda_dtype_t kv_dtype = PAGODA_DTYPE_F32,
                         double tolerance = kTolerance,
                         pagoda_dtype_t act_dtype = PAGODA_DTYPE_F32) {
    Harness h(path, block_size, kv_dtype, act_dtype);
    const ReferenceModel ref(*model::open_model(reference_path, {}, nullptr));
    ReferenceModel::Sequence rs = ref.new_sequence();
    PagedTestCache::Sequence seq;
    const int64_t v = h.vocab();

    const std::vector<int32_t> tokens = prompt(v, 13, 42);
    std::vector<float> logits = h.run({{&seq, tokens, true}});
    double worst = 0;
    for (size_t i = 0; i < tokens.size(); ++i)
        worst = std::max(worst, row_error(&logits[i * size_t(v)], ref.step(rs, tokens[i])));
    int32_t next = argmax(&logits[12 * size_t(v)], v);
    for (int step = 0; step < kDecodeSteps; ++step) {
        logits = h.run({{&seq, {next}}});
        worst = std::max(worst, row_error(logits.data(), ref.step(rs, next)));
        next = argmax(logits.data(), v);
    }
    std::printf("  %s (block_size %d, %s cache, %s activations): worst relative error %.3g\n",
                path.c_str(), block_size, pagoda_dtype_name(kv_dtype), pagoda_dtype_name(act_dtype),
                worst);
    if (!(worst <= tolerance))
        fail_msg("%s, block_size %d, %s cache, %s activations: relative error %g > %g",
                 path.c_str(), block_size, pagoda_dtype_name(kv_dtype),
                 pagoda_dtype_name(act_dtype), worst, tolerance);
    // Rounded activations leave a trace: an error at f32's level means they were not rounded.
    if (act_dtype != PAGODA_DTYPE_F32 && worst < 1e-5)
        fail_msg("%s with %s activations: relative error %g is f32's; were they rounded?",
                 path.c_str(), pagoda_dtype_name(act_dtype), worst);
}

std::string exec_model(const std::string &name) {
    return std::string(PAGODA_EXEC_MODELS_DIR) + "/" + name;
}

// Both formats against the reference on the Hugging Face weights, two block sizes.
void against_reference(const std::string &name, bool with_gguf) {
    const std::string hf = exec_model(name) + "/hf";
    for (int32_t block_size : {16, 3}) {
        prefill_then_decode(hf, hf, block_size);
        if (with_gguf) prefill_then_decode(exec_model(name) + "/model.gguf", hf, block_size);
    }
}

void llama_gqa_f32(void **) {
    against_reference("llama_gqa_f32", true);
}
void qwen2_bias_tied_f32(void **) {
    against_reference("qwen2_bias_tied_f32", true);
}
void qwen2_tied_f16(void **) {
    against_reference("qwen2_tied_f16", true);
}
void llama_bf16_linear_rope(void **) {
    against_reference("llama_bf16_linear", true);
}
// Llama 3 scaling: config.json's rope_scaling, and in the GGUF the rope_freqs tensor of
// per-frequency divisors. The Mistral GGUF carries its window too, but the reference check below
// stays on the Hugging Face form, where the window is tested with and without.
void llama3_rope_scaling(void **) {
    against_reference("llama3_scaled", true);
}
void mistral_sliding_window(void **) {
    against_reference("mistral_window", false);
}
void qwen3_qk_norm(void **) {
    against_reference("qwen3_tied_f32", true);
}
// Layer 0 sees the whole context, layers 1 and 2 the last 5 tokens (Hugging Face only: GGUF has
// no key for it).
void qwen2_window_from_layer(void **) {
    against_reference("qwen2_window_layers", false);
    const auto m = model::open_model(exec_model("qwen2_window_layers") + "/hf", {}, nullptr);
    assert_int_equal(m->config().window_of(0), 0);
    assert_int_equal(m->config().window_of(2), 5);
}

// Half-precision caches: keys and values are rounded when written (F16 to 11 significant bits,
// BF16 to 8), so the bounds are looser (about 1.3e-4 and 1.1e-3 measured) but still far below
// what a wrong layout or a missed conversion gives (above 1e-2).
void half_precision_kv_cache(void **) {
    const std::string hf = exec_model("llama_gqa_f32") + "/hf";
    prefill_then_decode(hf, hf, 3, PAGODA_DTYPE_F16, 1e-3);
    prefill_then_decode(hf, hf, 16, PAGODA_DTYPE_BF16, 1e-2);
}

// Half-precision activations: every tensor between two ops rounded to F16 or BF16 (the residual
// stream and the logits stay f32), against the f32 reference. Measured: 4.4e-4 (f16), 1.9e-4
// (f16 with an f16 cache), 3.0e-3 and 3.9e-3 (bf16 with a bf16 cache); the bounds leave 5x. A
// wrong conversion or a stride counted in the wrong element size gives errors of order 1.
void half_precision_activations(void **) {
    const std::string gqa = exec_model("llama_gqa_f32") + "/hf";
    prefill_then_decode(gqa, gqa, 16, PAGODA_DTYPE_F32, 2.5e-3, PAGODA_DTYPE_F16);
    prefill_then_decode(gqa, gqa, 3, PAGODA_DTYPE_BF16, 2e-2, PAGODA_DTYPE_BF16);
    const std::string bf16 = exec_model("llama_bf16_linear") + "/hf";
    prefill_then_decode(bf16, bf16, 16, PAGODA_DTYPE_BF16, 2e-2, PAGODA_DTYPE_BF16);
    const std::string qwen = exec_model("qwen2_tied_f16") + "/hf";
    prefill_then_decode(qwen, qwen, 16, PAGODA_DTYPE_F16, 1e-3, PAGODA_DTYPE_F16);
}

// One batch holding a prefill of one sequence between decodes of two others, after those two
// were prefilled in earlier steps; the three sequences' blocks interleave in the pool.
void mixed_prefill_and_decode(void **) {
    const std::string hf = exec_model("llama_gqa_f32") + "/hf";
    for (int32_t block_size : {16, 3}) {
        Harness h(hf, block_size);
        const ReferenceModel ref(*h.model);
        const int64_t v = h.vocab();
        PagedTestCache::Sequence a, b, c;
        ReferenceModel::Sequence ra = ref.new_sequence(), rb = ref.new_sequence(),
                                 rc = ref.new_sequence();
        const std::vector<int32_t> pb = prompt(v, 5, 1), pc = prompt(v, 9, 2), pa = prompt(v, 7, 3);

        std::vector<float> logits = h.run({{&b, pb}, {&c, pc}});
        double worst = 0;
        std::vector<double> last_b, last_c;
        for (int32_t t : pb) last_b = ref.step(rb, t);
        for (int32_t t : pc) last_c = ref.step(rc, t);
        worst = std::max(worst, row_error(&logits[0], last_b));
        worst = std::max(worst, row_error(&logits[size_t(v)], last_c));

        int32_t nb = argmax(&logits[0], v), nc = argmax(&logits[size_t(v)], v);
        for (int step = 0; step < 3; ++step) {
            // b decodes, a prefills (first step only) or decodes, c decodes.
            std::vector<BatchPiece> pieces = {
                {&b, {nb}},
                {&a, step == 0 ? pa : std::vector<int32_t>{argmax(&logits[size_t(v)], v)}},
                {&c, {nc}}};
            const std::vector<int32_t> a_tokens = pieces[1].tokens;
            logits = h.run(pieces);
            worst = std::max(worst, row_error(&logits[0], ref.step(rb, nb)));
            std::vector<double> ya;
            for (int32_t t : a_tokens) ya = ref.step(ra, t);
            worst = std::max(worst, row_error(&logits[size_t(v)], ya));
            worst = std::max(worst, row_error(&logits[2 * size_t(v)], ref.step(rc, nc)));
            nb = argmax(&logits[0], v);
            nc = argmax(&logits[2 * size_t(v)], v);
        }
        std::printf("  mixed batch (block_size %d): worst relative error %.3g\n", block_size,
                    worst);
        if (!(worst <= kTolerance))
            fail_msg("mixed batch, block_size %d: relative error %g > %g", block_size, worst,
                     kTolerance);
    }
}

// The same weights through GGUF (Q/K rows permuted, interleaved RoPE for llama) and through
// safetensors (half-split RoPE) give the same logits.
void gguf_matches_safetensors(void **) {
    double overall = 0;
    for (const char *name :
         {"llama_gqa_f32", "qwen2_bias_tied_f32", "mistral_head_dim_f32", "llama3_scaled"}) {
        Harness g(exec_model(name) + "/model.gguf", 3), s(exec_model(name) + "/hf", 16);
        const int64_t v = g.vocab();
        PagedTestCache::Sequence gs, ss;
        const std::vector<int32_t> tokens = prompt(v, 13, 5);
        std::vector<float> lg = g.run({{&gs, tokens, true}}), ls = s.run({{&ss, tokens, true}});
        double worst = 0;
        for (int step = 0;; ++step) {
            for (size_t i = 0; i < lg.size(); ++i)
                worst = std::max(worst, double(std::fabs(lg[i] - ls[i])));
            if (step == kDecodeSteps) break;
            const int32_t next = argmax(&ls[ls.size() - size_t(v)], v);
            lg = g.run({{&gs, {next}}});
            ls = s.run({{&ss, {next}}});
        }
        std::printf("  %s: GGUF vs safetensors max abs logit difference %.3g\n", name, worst);
        if (!(worst <= 1e-5))
            fail_msg("%s: GGUF and safetensors logits differ by %g > 1e-5", name, worst);
        overall = std::max(overall, worst);
    }
    std::printf("  GGUF vs safetensors: max abs difference over all models %.3g\n", overall);
}

// stories260K, greedy from BOS one token at a time: the ids SOURCE.md records for the first 10,
// and the reference forward's greedy run for the first 40.
// Weights quantized with every `pagoda quantize` recipe and kept quantized: the kernels decode
// the blocks (matmul on every projection and the tied LM head, embedding on the table) and
// match the reference run on the same blocks' reference decoding to f32 accuracy.
void quantized_weights(void **) {
    const std::string source = exec_model("qwen2_tied_256_f16") + "/model.gguf";
    test::TempDir dir;
    const model::QuantMix mixes[] = {model::QuantMix::Q8_0, model::QuantMix::Q4_0,
                                     model::QuantMix::Q4_K_M, model::QuantMix::Q5_K_M,
                                     model::QuantMix::Q6_K};
    for (model::QuantMix mix : mixes) {
        const std::string path = dir.file("quantized.gguf");
        model::quantize_gguf(source, path, mix, 1, {});
        const auto m = model::open_model(path, {}, nullptr);
        const model::TensorRef &gate = m->tensors().require("model.layers.0.mlp.gate_proj.weight", path);
        assert_true(model::is_quantized(gate.type));
        assert_true(model::is_quantized(m->tensors().require("model.embed_tokens.weight", path).type));
        prefill_then_decode(path, path, 16);
    }
}

void stories260k_greedy(void **) {
    const std::string path = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";
    Harness h(path, 16);
    const ReferenceModel ref(*h.model);
    ReferenceModel::Sequence rs = ref.new_sequence();
    PagedTestCache::Sequence seq;
    std::vector<int32_t> ours, theirs;
    int32_t next = 1, ref_next = 1;  // BOS
    for (int i = 0; i < 40; ++i) {
        const std::vector<float> logits = h.run({{&seq, {next}}});
        next = argmax(logits.data(), h.vocab());
        ours.push_back(next);
        const std::vector<double> r = ref.step(rs, ref_next);
        ref_next = int32_t(std::max_element(r.begin(), r.end()) - r.begin());
        theirs.push_back(ref_next);
    }
    const int32_t expected[10] = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298};
    for (int i = 0; i < 10; ++i)
        if (ours[size_t(i)] != expected[i])
            fail_msg("token %d: %d, SOURCE.md says %d", i, ours[size_t(i)], expected[i]);
    for (size_t i = 0; i < ours.size(); ++i)
        if (ours[i] != theirs[i])
            fail_msg("token %zu: %d, the reference forward says %d", i, ours[i], theirs[i]);
}

// A decode after a long prefill reuses the scratch; a larger batch later grows it; the results
// stay right either way (covered above) and bad batches are refused with the field named.
void rejects_malformed_batches(void **) {
    {
        Harness h(exec_model("llama_gqa_f32") + "/hf", 16);
        bool threw = false;
        try {
            h.forward.set_activation_dtype(PAGODA_DTYPE_I32);
        } catch (const Error &e) {
            threw = e.status() == PAGODA_ERR_INVALID_ARGUMENT &&
                    std::string(e.what()).find("activation") != std::string::npos;
        }
        assert_true(threw);
    }
    Harness h(exec_model("llama_gqa_f32") + "/hf", 16);
    PagedTestCache::Sequence seq;
    exec::ForwardBatch b = test::make_batch(h.cache, {{&seq, {1, 2, 3}}});
    std::vector<float> logits(size_t(h.vocab()));

    exec::ForwardBatch bad = b;
    bad.positions.pop_back();
    test::expect_error([&] { h.forward.run(bad, h.cache.geometry, h.cache.pools, logits.data()); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"positions"});
    bad = b;
    bad.logit_rows = {3};
    test::expect_error([&] { h.forward.run(bad, h.cache.geometry, h.cache.pools, logits.data()); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"logit_rows[0] = 3"});
    bad = b;
    bad.query_start.back() = 2;
    test::expect_error([&] { h.forward.run(bad, h.cache.geometry, h.cache.pools, logits.data()); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"query_start"});
    kv::KvGeometry geometry = h.cache.geometry;
    geometry.head_dim *= 2;
    test::expect_error([&] { h.forward.run(b, geometry, h.cache.pools, logits.data()); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"KV geometry"});
    // A slot past the pool is caught by the backend's kv_write, named in the message.
    bad = b;
    bad.slot_mapping[0] = h.cache.geometry.num_blocks * h.cache.geometry.block_size;
    test::expect_error([&] { h.forward.run(bad, h.cache.geometry, h.cache.pools, logits.data()); },
                       PAGODA_ERR_BACKEND, {"kv_write"});
    // The valid batch still runs.
    h.forward.run(b, h.cache.geometry, h.cache.pools, logits.data());
    for (float x : logits) assert_true(std::isfinite(x));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_gqa_f32),
        cmocka_unit_test(qwen2_bias_tied_f32),
        cmocka_unit_test(qwen2_tied_f16),
        cmocka_unit_test(llama_bf16_linear_rope),
        cmocka_unit_test(llama3_rope_scaling),
        cmocka_unit_test(mistral_sliding_window),
        cmocka_unit_test(qwen3_qk_norm),
        cmocka_unit_test(qwen2_window_from_layer),
        cmocka_unit_test(half_precision_kv_cache),
        cmocka_unit_test(half_precision_activations),
        cmocka_unit_test(mixed_prefill_and_decode),
        cmocka_unit_test(gguf_matches_safetensors),
        cmocka_unit_test(quantized_weights),
        cmocka_unit_test(stories260k_greedy),
        cmocka_unit_test(rejects_malformed_batches),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
