// The same random model (make_random_model.py) opened from its Hugging Face folder and from its
// GGUF file must describe the same network: equal configs and equal weights, once the GGUF's Q/K
// rows are put back in Hugging Face's order where llama.cpp permuted them for interleaved RoPE.
#include "model/gguf_model.hpp"
#include "model/hf_checkpoint.hpp"
#include "model/llama_tensors.hpp"
#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;

namespace {

float value_at(const TensorRef &t, size_t i) {
    switch (t.type) {
    case TensorType::F32: return static_cast<const float *>(t.data)[i];
    case TensorType::F16: return test::f16_to_float(static_cast<const uint16_t *>(t.data)[i]);
    case TensorType::BF16: return test::bf16_to_float(static_cast<const uint16_t *>(t.data)[i]);
    default: fail_msg("%s: not a float tensor", t.name.c_str());
    }
    return 0;
}

// The Hugging Face row that GGUF row `row` holds: per head, GGUF's pair (2i, 2i+1) is HF's
// (i, i + head_dim/2).
int64_t hf_row(int64_t row, int64_t head_dim) {
    const int64_t head = row / head_dim, r = row % head_dim;
    return head * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

void compare(const std::string &name) {
    const std::string dir = test::random_model(name);
    const HfCheckpoint hf(dir + "/hf");
    const GgufModel gguf = open_gguf_model(dir + "/model.gguf");
    const ModelConfig &a = hf.config(), &b = gguf.config;
    test::expect_same_config(a, b);
    assert_int_equal(a.rope.scaling, b.rope.scaling);
    assert_true(a.eos_token_ids == b.eos_token_ids);

    const bool permuted = b.rope.layout == PAGODA_ROPE_INTERLEAVED;
    assert_int_equal(a.rope.layout, PAGODA_ROPE_HALF_SPLIT);
    for (const ExpectedTensor &e : llama_expected_tensors(a)) {
        const TensorRef &x = hf.tensors().require(e.name, "hf");
        const TensorRef &y = gguf.tensors.require(e.name, "gguf");
        assert_true(x.shape == y.shape);
        const bool qk = e.name.ends_with("q_proj.weight") || e.name.ends_with("k_proj.weight") ||
                        e.name.ends_with("q_proj.bias") || e.name.ends_with("k_proj.bias");
        const int64_t rows = x.shape[0];
        const int64_t cols = x.shape.size() > 1 ? x.shape[1] : 1;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t src = permuted && qk ? hf_row(r, a.head_dim) : r;
            for (int64_t c = 0; c < cols; ++c) {
                const float hv = value_at(x, size_t(src * cols + c));
                const float gv = value_at(y, size_t(r * cols + c));
                if (hv != gv)
                    fail_msg("%s: %s[%lld, %lld] = %g, but %g in the Hugging Face folder",
                             name.c_str(), e.name.c_str(), (long long)r, (long long)c, gv, hv);
            }
        }
    }
}

void llama_f32(void **) { compare("llama_f32"); }
void qwen2_tied_f16(void **) { compare("qwen2_tied_f16"); }
void mistral_head_dim(void **) { compare("mistral_head_dim"); }

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_f32),
        cmocka_unit_test(qwen2_tied_f16),
        cmocka_unit_test(mistral_head_dim),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
