// The descriptor checks every backend shares (backends/common/op_checks.hpp): exact messages
// and statuses, matmul's type combinations, and the launch-time checks of COPY/SWAP_BLOCKS'
// host arrays. Each failure must be recorded exactly once, through the Reporter it was given.
// The fields ABI 1.8 added have their own file, test_op_checks_gemma.cpp.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "op_args.hpp"
#include "op_checks.hpp"
#include "op_check_recorder.hpp"  // last: it includes cmocka.h

namespace {

using pagoda::plugin::Reporter;

pagoda_op_matmul_t good_matmul(pagoda_dtype_t x, pagoda_dtype_t w, pagoda_dtype_t y) {
    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = x;
    a.w_dtype = w;
    a.y_dtype = y;
    a.m = 2;
    a.n = 3;
    a.k = 4;
    return a;
}

Check matmul(const pagoda_op_matmul_t &a) {
    return [a](const Reporter &r) { return pagoda::plugin::check_matmul(r, a); };
}

// ops.h: x, W and y each F32, BF16 or F16, in any combination.
void test_matmul_dtypes(void **state) {
    (void)state;
    const pagoda_dtype_t floats[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (pagoda_dtype_t x : floats)
        for (pagoda_dtype_t w : floats)
            for (pagoda_dtype_t y : floats) assert_accepted(matmul(good_matmul(x, w, y)), "types");
    auto a = good_matmul(PAGODA_DTYPE_F32, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32);
    a.flags = PAGODA_MATMUL_ACCUMULATE;
    assert_accepted(matmul(a), "accumulate");

    // x_dtype and y_dtype were required in ABI 1.0: 0 there is not "f32".
    a = good_matmul(PAGODA_DTYPE_INVALID, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32);
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: x_dtype is not set (must be f32, bf16 or f16)");
    assert_rejected(matmul(good_matmul(PAGODA_DTYPE_F16, PAGODA_DTYPE_F16, PAGODA_DTYPE_INVALID)),
                    PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: y_dtype is not set (must be f32, bf16 or f16)");
    assert_rejected(matmul(good_matmul(PAGODA_DTYPE_I32, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32)),
                    PAGODA_ERR_UNSUPPORTED,
                    "matmul: x_dtype = i32 (4) is not supported (must be f32, bf16 or f16)");
    a = good_matmul(PAGODA_DTYPE_F32, PAGODA_DTYPE_I8, PAGODA_DTYPE_F32);
    assert_rejected(matmul(a), PAGODA_ERR_UNSUPPORTED,
                    "matmul: w_dtype = i8 (6) is not supported (must be f32, bf16, f16 or a "
                    "quantized block type)");
    a = good_matmul(PAGODA_DTYPE_F32, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32);
    set_raw(a.y_dtype, 42);
    assert_rejected(matmul(a), PAGODA_ERR_UNSUPPORTED,
                    "matmul: y_dtype = unknown (42) is not supported (must be f32, bf16 or f16)");
    set_raw(a.y_dtype, -1);
    assert_rejected(matmul(a), PAGODA_ERR_UNSUPPORTED,
                    "matmul: y_dtype = unknown (-1) is not supported (must be f32, bf16 or f16)");
    // Several faults: the first field in x, w, y order is named.
    assert_rejected(matmul(good_matmul(PAGODA_DTYPE_BF16, PAGODA_DTYPE_U8, PAGODA_DTYPE_I32)),
                    PAGODA_ERR_UNSUPPORTED,
                    "matmul: w_dtype = u8 (7) is not supported (must be f32, bf16, f16 or a "
                    "quantized block type)");
}

void test_matmul_shapes(void **state) {
    (void)state;
    const auto base = good_matmul(PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F32);
    auto a = base;
    a.flags = 16;
    assert_rejected(matmul(a), PAGODA_ERR_UNSUPPORTED,
                    "matmul: flags = 16 has bits this backend does not know");
    a.flags = PAGODA_MATMUL_QUANTIZE_X_BLOCK;
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: PAGODA_MATMUL_QUANTIZE_X_BLOCK without PAGODA_MATMUL_QUANTIZE_X: "
                    "it widens that leave");
    a.flags = PAGODA_MATMUL_ROUND_W;  // bf16 W: not a block type
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: PAGODA_MATMUL_ROUND_W with w_dtype bf16 and x_dtype f32: it applies "
                    "to block-quantized weights and bf16/f16 activations only");
    a = base;
    a.m = 0;
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT, "matmul: m = 0 must be positive");
    a = base;
    a.ldy = 2;
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: ldy = 2 is smaller than the row length 3");
}

// The address-space check counts bytes of each operand's own type: 2^61 + 1 elements fit as
// bf16 (2^62 + 2 bytes) but not as f32.
void test_matmul_extent_counts_element_size(void **state) {
    (void)state;
    auto a = good_matmul(PAGODA_DTYPE_BF16, PAGODA_DTYPE_BF16, PAGODA_DTYPE_BF16);
    a.m = 2;
    a.n = 1;
    a.k = 1;
    a.ldx = int64_t(1) << 61;
    assert_accepted(matmul(a), "bf16 x of 2^61 + 1 elements");
    a.x_dtype = PAGODA_DTYPE_F32;
    assert_rejected(matmul(a), PAGODA_ERR_INVALID_ARGUMENT,
                    "matmul: x of 2 rows with stride 2305843009213693952 does not fit in the "
                    "address space");
}

void test_dense_ops(void **state) {
    (void)state;
    using namespace pagoda::plugin;
    pagoda_op_embedding_t e{};
    e.struct_size = sizeof e;
    e.table_dtype = PAGODA_DTYPE_F16;
    e.vocab_size = 10;
    e.dim = 4;
    e.n_tokens = 3;
    auto embedding = [&e](const Reporter &r) { return check_embedding(r, e); };
    assert_accepted(embedding, "embedding");
    e.table_dtype = PAGODA_DTYPE_INVALID;
    assert_rejected(embedding, PAGODA_ERR_INVALID_ARGUMENT,
                    "embedding: table_dtype is not set (must be f32, bf16, f16 or a quantized "
                    "block type)");

    pagoda_op_rmsnorm_t n{};
    n.struct_size = sizeof n;
    n.weight_dtype = PAGODA_DTYPE_BF16;
    n.rows = 2;
    n.dim = 8;
    n.eps = 1e-6f;
    auto rmsnorm = [&n](const Reporter &r) { return check_rmsnorm(r, n); };
    assert_accepted(rmsnorm, "rmsnorm");
    n.eps = -1.0f;
    assert_rejected(rmsnorm, PAGODA_ERR_INVALID_ARGUMENT,
                    "rmsnorm: eps = -1 must be finite and not negative");
    n.eps = std::numeric_limits<float>::quiet_NaN();
    assert_rejected(rmsnorm, PAGODA_ERR_INVALID_ARGUMENT,
                    "rmsnorm: eps = nan must be finite and not negative");

    pagoda_op_silu_mul_t s{};
    s.struct_size = sizeof s;
    s.rows = 2;
    s.dim = 4;
    s.ld_in = 3;
    assert_rejected([&s](const Reporter &r) { return check_silu_mul(r, s); },
                    PAGODA_ERR_INVALID_ARGUMENT,
                    "silu_mul: ld_in = 3 is smaller than the row length 4");

    pagoda_op_add_t add{};
    add.struct_size = sizeof add;
    add.n = -2;
    assert_rejected([&add](const Reporter &r) { return check_add(r, add); },
                    PAGODA_ERR_INVALID_ARGUMENT, "add: n = -2 must be positive");

    pagoda_op_argmax_t am{};
    am.struct_size = sizeof am;
    am.rows = 1;
    am.cols = int64_t(1) << 32;
    assert_rejected([&am](const Reporter &r) { return check_argmax(r, am); },
                    PAGODA_ERR_INVALID_ARGUMENT,
                    "argmax: cols = 4294967296 does not fit the int32 indices of out");

    pagoda_op_softmax_t sm{};
    sm.struct_size = sizeof sm;
    sm.rows = 1;
    sm.cols = 5;
    auto softmax = [&sm](const Reporter &r) { return check_softmax(r, sm); };
    assert_accepted(softmax, "softmax with scale 0 (taken as 1)");
    sm.scale = std::numeric_limits<float>::infinity();
    assert_rejected(softmax, PAGODA_ERR_INVALID_ARGUMENT, "softmax: scale = inf is not finite");
}

void test_rope(void **state) {
    (void)state;
    pagoda_op_rope_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_ROPE_INTERLEAVED;
    a.scaling = PAGODA_ROPE_SCALING_NONE;
    a.n_tokens = 3;
    a.n_heads = 2;
    a.head_dim = 8;
    a.theta = 10000.0f;
    auto rope = [&a](const Reporter &r) { return pagoda::plugin::check_rope(r, a); };
    assert_accepted(rope, "rope without scaling (factor unused)");
    a.rot_dim = 3;
    assert_rejected(rope, PAGODA_ERR_INVALID_ARGUMENT,
                    "rope: rot_dim = 3 must be even and in [2, head_dim = 8] (0 means head_dim)");
    a.rot_dim = 4;
    set_raw(a.layout, -1);
    assert_rejected(rope, PAGODA_ERR_UNSUPPORTED,
                    "rope: layout = -1 is not a layout this backend knows");
    a.layout = PAGODA_ROPE_HALF_SPLIT;
    a.scaling = PAGODA_ROPE_SCALING_LLAMA3;
    a.factor = 8.0f;
    a.low_freq_factor = 4.0f;
    a.high_freq_factor = 1.0f;
    a.original_max_position = 8192;
    assert_rejected(rope, PAGODA_ERR_INVALID_ARGUMENT,
                    "rope: high_freq_factor = 1 must be greater than low_freq_factor = 4");
    a.low_freq_factor = 1.0f;
    a.high_freq_factor = 4.0f;
    assert_accepted(rope, "llama3 scaling");
    a.original_max_position = 0;
    assert_rejected(rope, PAGODA_ERR_INVALID_ARGUMENT,
                    "rope: original_max_position = 0 must be positive");
}

void test_kv_write(void **state) {
    (void)state;
    pagoda_op_kv_write_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = PAGODA_DTYPE_BF16;
    a.n_kv_heads = 2;
    a.head_dim = 8;
    a.block_size = 16;
    a.num_blocks = 4;
    auto kv_write = [&a](const Reporter &r) { return pagoda::plugin::check_kv_write(r, a); };
    assert_accepted(kv_write, "kv_write of no tokens");
    a.n_tokens = 3;
    assert_accepted(kv_write, "kv_write");
    a.block_size = 129;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: block_size 129 is outside 1..128");
    a.block_size = 16;
    a.cache_dtype = PAGODA_DTYPE_I32;
    assert_rejected(kv_write, PAGODA_ERR_UNSUPPORTED,
                    "kv_write: cache_dtype i32 is not supported (f32, bf16 or f16)");
    set_raw(a.cache_dtype, 99);
    assert_rejected(kv_write, PAGODA_ERR_UNSUPPORTED,
                    "kv_write: cache_dtype 99 is not supported (f32, bf16 or f16)");
    a.cache_dtype = PAGODA_DTYPE_F32;
    a.num_blocks = int64_t(1) << 60;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: the cache of num_blocks 1152921504606846976 × n_kv_heads × "
                    "block_size × head_dim is too large to address");
    a.num_blocks = 4;
    a.k_token_stride = 15;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_token_stride 15 is smaller than a token's 16 elements");
    a.k_token_stride = 0;
    a.n_tokens = -1;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT, "kv_write: n_tokens -1 is negative");
}

// ops.h: a newer caller's struct_size is accepted while the fields this backend does not know
// are zero; a nonzero one is refused as unsupported. An older caller's is read with the
// missing fields as zero, down to ABI 1.0's size.
void test_read_op_args(void **state) {
    (void)state;
    using pagoda::plugin::read_op_args;
    struct Newer {
        pagoda_op_add_t add;
        unsigned char later_fields[16];
    } newer{};
    newer.add.struct_size = sizeof newer;
    newer.add.n = 7;
    pagoda_op_add_t add{};
    auto read_add = [&](const Reporter &r) { return read_op_args(r, "add", &newer, add); };
    assert_accepted(read_add, "a larger struct whose extra fields are zero");
    assert_int_equal(add.n, 7);
    assert_int_equal(add.struct_size, sizeof newer);
    newer.later_fields[5] = 1;
    const std::string refused = "add: the descriptor sets fields this backend does not know "
                                "(struct_size " + std::to_string(sizeof newer) + " > " +
                                std::to_string(sizeof add) + ", byte " +
                                std::to_string(sizeof add + 5) + " is nonzero)";
    assert_rejected(read_add, PAGODA_ERR_UNSUPPORTED, refused.c_str());
    newer.later_fields[5] = 0;
    newer.add.struct_size = 8;
    assert_rejected(read_add, PAGODA_ERR_INVALID_ARGUMENT,
                    ("add: struct_size 8 is too small (at least " +
                     std::to_string(offsetof(pagoda_op_add_t, act_dtype)) + ")").c_str());
    auto read_null = [&](const Reporter &r) { return read_op_args(r, "add", nullptr, add); };
    assert_rejected(read_null, PAGODA_ERR_INVALID_ARGUMENT, "add: the argument struct is NULL");

    // An ABI 1.0 KV_WRITE ends before k_rope, which then reads as NULL whatever follows.
    struct OldKvWrite {
        pagoda_op_kv_write_t kv;
    } old{};
    std::memset(&old, 0x5a, sizeof old);
    old.kv.struct_size = offsetof(pagoda_op_kv_write_t, k_rope);
    pagoda_op_kv_write_t kv{};
    auto read_kv = [&](const Reporter &r) { return read_op_args(r, "kv_write", &old, kv); };
    assert_accepted(read_kv, "an ABI 1.0 kv_write");
    assert_null(kv.k_rope);
    old.kv.struct_size -= 8;
    assert_rejected(read_kv, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: struct_size 104 is too small (at least 112)");
}

void test_kv_write_k_rope(void **state) {
    (void)state;
    pagoda_op_rope_t rope{};
    rope.struct_size = sizeof rope;
    rope.layout = PAGODA_ROPE_HALF_SPLIT;
    rope.head_dim = 8;
    rope.rot_dim = 4;
    rope.theta = 10000.0f;
    pagoda_op_kv_write_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = PAGODA_DTYPE_F16;
    a.n_tokens = 3;
    a.n_kv_heads = 2;
    a.head_dim = 8;
    a.block_size = 16;
    a.num_blocks = 4;
    a.k_rope = &rope;
    auto kv_write = [&a](const Reporter &r) { return pagoda::plugin::check_kv_write(r, a); };
    // Its x, n_tokens, n_heads and token_stride are ignored (zero here), positions too (NULL).
    assert_accepted(kv_write, "kv_write with k_rope");
    rope.head_dim = 16;
    rope.rot_dim = 0;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_rope.head_dim = 16 must equal head_dim = 8");
    rope.head_dim = 8;
    rope.rot_dim = 10;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_rope.rot_dim = 10 must be even and in [2, head_dim = 8] (0 means "
                    "head_dim)");
    rope.rot_dim = 0;
    set_raw(rope.layout, 7);
    assert_rejected(kv_write, PAGODA_ERR_UNSUPPORTED,
                    "kv_write: k_rope.layout = 7 is not a layout this backend knows");
    rope.layout = PAGODA_ROPE_INTERLEAVED;
    set_raw(rope.scaling, 9);
    assert_rejected(kv_write, PAGODA_ERR_UNSUPPORTED,
                    "kv_write: k_rope.scaling = 9 is not a scaling this backend knows");
    rope.scaling = PAGODA_ROPE_SCALING_LINEAR;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_rope.factor = 0 must be finite and positive");
    rope.factor = 2.0f;
    assert_accepted(kv_write, "linear scaling");
    rope.scaling = PAGODA_ROPE_SCALING_LLAMA3;
    rope.factor = 8.0f;
    rope.low_freq_factor = 1.0f;
    rope.high_freq_factor = 4.0f;
    rope.original_max_position = 8192;
    assert_accepted(kv_write, "llama3 scaling");
    rope.high_freq_factor = 1.0f;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_rope.high_freq_factor = 1 must be greater than "
                    "low_freq_factor = 1");
    rope.high_freq_factor = 4.0f;
    rope.theta = 0.0f;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    "kv_write: k_rope.theta = 0 must be finite and positive");
    rope.theta = 500000.0f;
    // The nested struct is read by its own struct_size, by the same rules as an op's.
    rope.struct_size = 4;
    assert_rejected(kv_write, PAGODA_ERR_INVALID_ARGUMENT,
                    ("kv_write: k_rope: struct_size 4 is too small (at least " +
                     std::to_string(offsetof(pagoda_op_rope_t, act_dtype)) + ")").c_str());
    struct NewerRope {
        pagoda_op_rope_t rope;
        uint64_t later_field;
    } newer{rope, 0};
    newer.rope.struct_size = sizeof newer;
    a.k_rope = &newer.rope;
    assert_accepted(kv_write, "a newer rope struct whose extra field is zero");
    newer.later_field = 3;
    assert_rejected(kv_write, PAGODA_ERR_UNSUPPORTED,
                    ("kv_write: k_rope: the descriptor sets fields this backend does not know "
                     "(struct_size " + std::to_string(sizeof newer) + " > " +
                     std::to_string(sizeof rope) + ", byte " + std::to_string(sizeof rope) +
                     " is nonzero)").c_str());
}

void test_paged_attention(void **state) {
    (void)state;
    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = PAGODA_DTYPE_F16;
    a.n_seqs = 2;
    a.n_q_heads = 4;
    a.n_kv_heads = 2;
    a.head_dim = 8;
    a.block_size = 16;
    a.num_blocks = 8;
    a.max_blocks_per_seq = 4;
    a.scale = 0.35f;
    auto attention = [&a](const Reporter &r) {
        return pagoda::plugin::check_paged_attention(r, a);
    };
    assert_accepted(attention, "paged_attention");
    set_raw(a.layout, 7);
    assert_rejected(attention, PAGODA_ERR_UNSUPPORTED,
                    "paged_attention: layout 7 is not supported (only "
                    "PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)");
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.n_q_heads = 3;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: n_q_heads 3 is not a positive multiple of n_kv_heads 2");
    a.n_q_heads = 4;
    a.sliding_window = -1;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: sliding_window -1 is negative");
    a.sliding_window = 0;
    a.max_blocks_per_seq = int64_t(1) << 60;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: max_blocks_per_seq 1152921504606846976 is too large");
    a.max_blocks_per_seq = 4;
    a.out_token_stride = 31;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: out_token_stride 31 is smaller than a token's 32 elements");
    a.out_token_stride = 0;

    // Cache parallelism (ABI 1.2): kv_shard must name one of kv_shards (0 and 1 both mean one).
    a.kv_shards = 3;
    a.kv_shard = 2;
    assert_accepted(attention, "paged_attention, shard 2 of 3");
    a.kv_shard = 3;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: kv_shard 3 is outside [0, kv_shards 3)");
    a.kv_shard = -1;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: kv_shard -1 is outside [0, kv_shards 3)");
    a.kv_shards = 0;
    a.kv_shard = 1;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: kv_shard 1 is outside [0, kv_shards 1)");
    a.kv_shards = -2;
    a.kv_shard = 0;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: kv_shards -2 is negative");
    // The capacity, max_blocks_per_seq × block_size × kv_shards, must not overflow.
    a.kv_shards = 1 << 30;
    a.max_blocks_per_seq = int64_t(1) << 40;
    assert_rejected(attention, PAGODA_ERR_INVALID_ARGUMENT,
                    "paged_attention: max_blocks_per_seq 1099511627776 is too large");
}

void test_attention_merge(void **state) {
    (void)state;
    pagoda_op_attention_merge_t a{};
    a.struct_size = sizeof a;
    a.n_parts = 3;
    a.n_tokens = 5;
    a.n_heads = 4;
    a.head_dim = 8;
    a.act_dtype = PAGODA_DTYPE_BF16;
    auto merge = [&a](const Reporter &r) { return pagoda::plugin::check_attention_merge(r, a); };
    assert_accepted(merge, "attention_merge");
    a.n_parts = 0;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: n_parts = 0 must be positive");
    a.n_parts = 3;
    a.n_tokens = -1;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: n_tokens = -1 must be positive");
    a.n_tokens = 5;
    a.n_heads = 0;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: n_heads = 0 must be positive");
    a.n_heads = 4;
    a.head_dim = 0;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: head_dim = 0 must be positive");
    a.head_dim = 8;
    a.out_token_stride = 31;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: out_token_stride 31 is smaller than a token's 32 elements");
    a.out_token_stride = 40;
    assert_accepted(merge, "attention_merge, padded out");
    set_raw(a.act_dtype, PAGODA_DTYPE_I32);
    assert_rejected(merge, PAGODA_ERR_UNSUPPORTED,
                    "attention_merge: act_dtype = i32 (4) is not supported (must be f32 (or 0), "
                    "bf16 or f16)");
    set_raw(a.act_dtype, 0);
    assert_accepted(merge, "attention_merge, act_dtype 0 (f32)");
    a.n_parts = int64_t(1) << 40;
    a.n_tokens = int64_t(1) << 30;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: n_parts × n_tokens × n_heads × head_dim is too large");
    a.n_parts = int64_t(1) << 20;
    a.head_dim = 1024;
    a.out_token_stride = 0;
    assert_rejected(merge, PAGODA_ERR_INVALID_ARGUMENT,
                    "attention_merge: parts of 1125899906842624 rows with stride 4096 does not "
                    "fit in the address space");
}

void test_copy_and_swap_descriptors(void **state) {
    (void)state;
    using namespace pagoda::plugin;
    pagoda_op_copy_blocks_t a{};
    a.struct_size = sizeof a;
    a.n_caches = 2;
    a.block_bytes = 64;
    a.n_pairs = 1;
    a.src_num_blocks = 4;
    a.dst_num_blocks = 4;
    auto copy = [&a](const Reporter &r) { return check_copy_blocks(r, a); };
    auto swap = [&a](const Reporter &r) { return check_swap_blocks(r, a); };
    assert_accepted(copy, "copy_blocks");
    assert_accepted(swap, "swap_blocks");
    // Each op names itself, though they share the struct and the checks.
    a.block_bytes = 0;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT,
                    "copy_blocks: block_bytes 0 must be positive");
    assert_rejected(swap, PAGODA_ERR_INVALID_ARGUMENT,
                    "swap_blocks: block_bytes 0 must be positive");
    a.block_bytes = 64;
    a.src_num_blocks = 0;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT,
                    "copy_blocks: src_num_blocks 0 and dst_num_blocks 4 must be positive");
    a.src_num_blocks = 4;
    a.n_pairs = -1;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT, "copy_blocks: n_pairs -1 is negative");
    a.n_pairs = 1;
    // COPY_BLOCKS ignores direction; SWAP_BLOCKS checks it first.
    set_raw(a.direction, 7);
    assert_accepted(copy, "copy_blocks with an unused direction");
    assert_rejected(swap, PAGODA_ERR_INVALID_ARGUMENT,
                    "swap_blocks: direction 7 is neither PAGODA_SWAP_OUT nor PAGODA_SWAP_IN");
}

void test_block_pairs(void **state) {
    (void)state;
    using pagoda::plugin::check_block_pairs;
    char cache0[4], cache1[4];
    void *caches[2] = {cache0, cache1};
    void *with_null[2] = {cache0, nullptr};
    int32_t pairs[4] = {0, 1, 2, 3};
    pagoda_op_copy_blocks_t a{};
    a.struct_size = sizeof a;
    a.n_caches = 2;
    a.src_caches = caches;
    a.dst_caches = caches;
    a.block_bytes = 1;
    a.n_pairs = 2;
    a.block_pairs = pairs;
    a.src_num_blocks = 4;
    a.dst_num_blocks = 4;
    auto swap = [&a](const Reporter &r) { return check_block_pairs(r, "swap_blocks", a); };
    auto copy = [&a](const Reporter &r) { return check_block_pairs(r, "copy_blocks", a); };
    assert_accepted(copy, "block pairs");

    a.dst_num_blocks = 3;
    assert_rejected(swap, PAGODA_ERR_INVALID_ARGUMENT,
                    "swap_blocks: pair 1 has destination block 3 (block_pairs[3]), past the "
                    "cache's 3 blocks");
    a.dst_num_blocks = 4;
    pairs[2] = -2;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT,
                    "copy_blocks: pair 1 has source block -2 (block_pairs[2]), which is negative");
    pairs[2] = 2;
    a.block_bytes = int64_t(1) << 62;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT,
                    "copy_blocks: pair 1 has source block 2 (block_pairs[2]), too far to address");
    a.block_bytes = 1;

    a.dst_caches = with_null;
    assert_rejected(swap, PAGODA_ERR_INVALID_ARGUMENT, "swap_blocks: dst_caches[1] is NULL");
    a.dst_caches = nullptr;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT, "copy_blocks: dst_caches is NULL");
    a.dst_caches = caches;
    a.block_pairs = nullptr;
    assert_rejected(copy, PAGODA_ERR_INVALID_ARGUMENT, "copy_blocks: block_pairs is NULL");

    // Nothing to copy: the arrays are not read, so they may be NULL.
    a.src_caches = a.dst_caches = nullptr;
    a.n_pairs = 0;
    assert_accepted(copy, "no pairs");
    a.n_pairs = 2;
    a.n_caches = 0;
    assert_accepted(copy, "no caches");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_dtypes),
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_extent_counts_element_size),
        cmocka_unit_test(test_dense_ops),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_kv_write),
        cmocka_unit_test(test_read_op_args),
        cmocka_unit_test(test_kv_write_k_rope),
        cmocka_unit_test(test_paged_attention),
        cmocka_unit_test(test_attention_merge),
        cmocka_unit_test(test_copy_and_swap_descriptors),
        cmocka_unit_test(test_block_pairs),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
