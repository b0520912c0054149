// The shared descriptor checks (backends/common/op_checks.hpp) of what ABI 1.8 added for the
// Gemma family: SILU_MUL's activation, PAGED_ATTENTION's softcap, EMBEDDING's scale and the
// SOFTCAP op; and how read_op_args reads an older caller's struct without them. Exact statuses
// and messages, each failure recorded once (op_check_recorder.hpp).
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "op_args.hpp"
#include "op_checks.hpp"
#include "op_check_recorder.hpp"  // last: it includes cmocka.h

namespace {

using pagoda::plugin::Reporter;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// SiLU and GELU (tanh) are known; any other value may be a later ABI's activation, so it is
// unsupported rather than invalid.
void test_glu_activation(void **state) {
    (void)state;
    pagoda_op_silu_mul_t a{};
    a.struct_size = sizeof a;
    a.rows = 2;
    a.dim = 4;
    a.act_dtype = PAGODA_DTYPE_BF16;
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_silu_mul(r, a); };
    assert_accepted(check, "activation 0 (SiLU)");
    a.activation = PAGODA_GLU_GELU_TANH;
    assert_accepted(check, "GELU (tanh)");
    a.activation = 2;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "silu_mul: activation = 2 is not an activation this backend knows");
    a.activation = -1;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "silu_mul: activation = -1 is not an activation this backend knows");
    // act_dtype is checked before it.
    set_raw(a.act_dtype, PAGODA_DTYPE_I8);
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "silu_mul: act_dtype = i8 (6) is not supported (must be f32 (or 0), bf16 or "
                    "f16)");
}

void test_attention_softcap(void **state) {
    (void)state;
    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = PAGODA_DTYPE_BF16;
    a.n_seqs = 2;
    a.n_q_heads = 8;
    a.n_kv_heads = 2;
    a.head_dim = 64;
    a.block_size = 16;
    a.num_blocks = 8;
    a.max_blocks_per_seq = 4;
    a.scale = 0.125f;
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_paged_attention(r, a); };
    assert_accepted(check, "softcap 0 (off)");
    a.softcap = 50.0f;
    assert_accepted(check, "softcap 50 (Gemma 2)");
    a.softcap = 1e-30f;
    assert_accepted(check, "a tiny softcap");
    a.softcap = -0.0f;  // compares equal to 0: off
    assert_accepted(check, "softcap -0");
    a.softcap = -1.0f;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: softcap = -1 must be 0 (off) or positive and finite");
    a.softcap = kNaN;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: softcap = nan must be 0 (off) or positive and finite");
    a.softcap = kInf;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: softcap = inf must be 0 (off) or positive and finite");
    a.softcap = -kInf;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: softcap = -inf must be 0 (off) or positive and finite");
    // With cache parallelism too: lse is then over the capped scores (ops.h).
    a.softcap = 30.0f;
    a.kv_shards = 2;
    a.kv_shard = 1;
    assert_accepted(check, "softcap on a KV shard");
}

void test_embedding_scale(void **state) {
    (void)state;
    pagoda_op_embedding_t a{};
    a.struct_size = sizeof a;
    a.table_dtype = PAGODA_DTYPE_BF16;
    a.out_dtype = PAGODA_DTYPE_F16;
    a.vocab_size = 100;
    a.dim = 16;
    a.n_tokens = 3;
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_embedding(r, a); };
    assert_accepted(check, "scale 0 (taken as 1)");
    a.scale = 48.0f;  // √2304, Gemma 2B's hidden size
    assert_accepted(check, "scale 48");
    a.scale = -0.5f;
    assert_accepted(check, "a negative scale");
    a.scale = kInf;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "embedding: scale = inf is not finite");
    a.scale = kNaN;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "embedding: scale = nan is not finite");
}

void test_softcap_op(void **state) {
    (void)state;
    pagoda_op_softcap_t a{};
    a.struct_size = sizeof a;
    a.n = 256000;
    a.cap = 30.0f;
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_softcap(r, a); };
    assert_accepted(check, "dtype 0 (f32)");
    a.dtype = PAGODA_DTYPE_F32;
    assert_accepted(check, "f32");
    a.dtype = PAGODA_DTYPE_BF16;
    assert_accepted(check, "bf16");
    a.dtype = PAGODA_DTYPE_F16;
    assert_accepted(check, "f16");
    a.n = 0;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "softcap: n = 0 must be positive");
    a.n = -5;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "softcap: n = -5 must be positive");
    a.n = 7;
    // Unlike attention's softcap, 0 is no "off" here: it would divide by zero.
    a.cap = 0.0f;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "softcap: cap = 0 must be positive and finite");
    a.cap = -30.0f;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "softcap: cap = -30 must be positive and finite");
    a.cap = kInf;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "softcap: cap = inf must be positive and finite");
    a.cap = kNaN;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "softcap: cap = nan must be positive and finite");
    a.cap = 30.0f;
    set_raw(a.dtype, PAGODA_DTYPE_I32);
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "softcap: dtype = i32 (4) is not supported (must be f32 (or 0), bf16 or f16)");
    set_raw(a.dtype, 42);
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "softcap: dtype = unknown (42) is not supported (must be f32 (or 0), bf16 or "
                    "f16)");
    // The extent counts the type's own bytes: 2^61 values fit as bf16, not as f32.
    a.n = int64_t(1) << 61;
    a.dtype = PAGODA_DTYPE_BF16;
    assert_accepted(check, "2^61 bf16 values");
    a.dtype = PAGODA_DTYPE_F32;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "softcap: x of 1 rows with stride 2305843009213693952 does not fit in the "
                    "address space");
}

// An ABI 1.7 caller's struct ends before the new field, which then reads as 0 (off, SiLU, 1)
// whatever lies past it; SOFTCAP is new in 1.8, so it has no shorter form.
void test_older_callers(void **state) {
    (void)state;
    using pagoda::plugin::read_op_args;
    struct {
        pagoda_op_paged_attention_t a;
    } old_attention;
    std::memset(&old_attention, 0x7f, sizeof old_attention);
    old_attention.a.struct_size = offsetof(pagoda_op_paged_attention_t, softcap);
    pagoda_op_paged_attention_t attention{};
    assert_accepted(
        [&](const Reporter &r) {
            return read_op_args(r, "paged_attention", &old_attention, attention);
        },
        "an ABI 1.7 paged_attention");
    assert_true(attention.softcap == 0.0f);

    struct {
        pagoda_op_silu_mul_t a;
    } old_glu;
    std::memset(&old_glu, 0x7f, sizeof old_glu);
    old_glu.a.struct_size = offsetof(pagoda_op_silu_mul_t, activation);
    pagoda_op_silu_mul_t glu{};
    assert_accepted(
        [&](const Reporter &r) { return read_op_args(r, "silu_mul", &old_glu, glu); },
        "a silu_mul ending before activation");
    assert_int_equal(glu.activation, PAGODA_GLU_SILU);

    struct {
        pagoda_op_embedding_t a;
    } old_embedding;
    std::memset(&old_embedding, 0x7f, sizeof old_embedding);
    old_embedding.a.struct_size = offsetof(pagoda_op_embedding_t, scale);
    pagoda_op_embedding_t embedding{};
    assert_accepted(
        [&](const Reporter &r) {
            return read_op_args(r, "embedding", &old_embedding, embedding);
        },
        "an embedding ending before scale");
    assert_true(embedding.scale == 0.0f);

    pagoda_op_softcap_t softcap{};
    softcap.struct_size = 8;
    pagoda_op_softcap_t read{};
    assert_rejected(
        [&](const Reporter &r) { return read_op_args(r, "softcap", &softcap, read); },
        PAGODA_ERR_INVALID_ARGUMENT,
        ("softcap: struct_size 8 is too small (at least " + std::to_string(sizeof softcap) + ")")
            .c_str());
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glu_activation),
        cmocka_unit_test(test_attention_softcap),
        cmocka_unit_test(test_embedding_scale),
        cmocka_unit_test(test_softcap_op),
        cmocka_unit_test(test_older_callers),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
