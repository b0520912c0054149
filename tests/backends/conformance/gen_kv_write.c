/* KV_WRITE cases: every cache type, block sizes 1/16/32 and others, padding slots, padded token
 * strides, no tokens at all, and a slot past the cache (refused by both), with f32 (act_dtype 0,
 * as an ABI 1.0 caller leaves it), bf16 and f16 keys and values, and the fused RoPE (k_rope).
 * The caches must come out bit for bit equal: rounding to bf16/f16 is round-to-nearest-even
 * everywhere. PAGED_ATTENTION's cases are in gen_paged.c. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const pagoda_dtype_t kTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

/* An act_dtype field's type: 0 means f32 (ops.h). */
static pagoda_dtype_t act_type(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : act;
}

/* `n` random activations of `act` (0 = f32) in [lo, hi). */
static void *random_act(test_rng_t *rng, pagoda_dtype_t act, size_t n, float lo, float hi) {
    if (act_type(act) == PAGODA_DTYPE_F32) return conf_random_f32(rng, n, lo, hi);
    return conf_random_typed(rng, act, n, lo, hi);
}

static const char *act_label(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? "0 (f32)" : pagoda_dtype_name(act);
}

/* ------------------------------------------------------------------------------------------ */
/* KV_WRITE                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* `n_tokens` distinct slots of `n_slots`, drawn from a shuffled pool; token t is padding (-1)
 * where t % pad_every == pad_at. The array holds at least one entry. */
static int64_t *random_slots(test_rng_t *rng, int64_t n_slots, int64_t n_tokens, int pad_every,
                             int pad_at) {
    int64_t *pool = test_xmalloc((size_t)n_slots * sizeof *pool);
    for (int64_t i = 0; i < n_slots; ++i) pool[i] = i;
    for (int64_t i = n_slots - 1; i > 0; --i) {
        const int64_t j = test_rng_int(rng, 0, i), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    int64_t *slots = test_xmalloc((size_t)(n_tokens ? n_tokens : 1) * sizeof *slots);
    for (int64_t t = 0; t < n_tokens; ++t) slots[t] = t % pad_every == pad_at ? -1 : pool[t];
    free(pool);
    return slots;
}

/* The KV_WRITE step of case `c` with its shape; the pointers are bound by the caller. */
static pagoda_op_kv_write_t *kv_write_step(conf_case_t *c, pagoda_dtype_t dtype, pagoda_dtype_t act,
                                           int64_t n_tokens, int64_t n_kv_heads, int64_t head_dim,
                                           int64_t block_size, int64_t num_blocks,
                                           int64_t k_stride, int64_t v_stride) {
    pagoda_op_kv_write_t *a = &conf_add_step(c, PAGODA_OP_KV_WRITE)->kv_write;
    a->layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a->cache_dtype = dtype;
    a->n_tokens = n_tokens;
    a->n_kv_heads = n_kv_heads;
    a->head_dim = head_dim;
    a->block_size = block_size;
    a->num_blocks = num_blocks;
    a->k_token_stride = k_stride;
    a->v_token_stride = v_stride;
    a->act_dtype = act;
    return a;
}

static void kv_write_case(test_rng_t *rng, int64_t n_tokens, int64_t n_kv_heads, int64_t head_dim,
                          int64_t block_size, pagoda_dtype_t dtype, pagoda_dtype_t act, int padded,
                          int bad_slot, conf_tally_t *tally) {
    const int64_t row = n_kv_heads * head_dim;
    const int64_t k_stride = padded ? row + test_rng_int(rng, 1, 5) : row;
    const int64_t v_stride = padded ? row + test_rng_int(rng, 1, 5) : row;
    const int64_t num_blocks = n_tokens / block_size + test_rng_int(rng, 1, 4);
    const int64_t n_slots = num_blocks * block_size;
    conf_case_t c;
    conf_case_init(&c, "kv_write tokens=%lld kv_heads=%lld head_dim=%lld block=%lld blocks=%lld "
                   "cache=%s act=%s%s%s",
                   (long long)n_tokens, (long long)n_kv_heads, (long long)head_dim,
                   (long long)block_size, (long long)num_blocks, pagoda_dtype_name(dtype),
                   act_label(act), padded ? " strided" : "",
                   bad_slot ? " with a slot past the cache" : "");
    kv_write_step(&c, dtype, act, n_tokens, n_kv_heads, head_dim, block_size, num_blocks,
                  padded ? k_stride : 0, padded ? v_stride : 0);
    int64_t *slots = random_slots(rng, n_slots, n_tokens, 4, 3);
    if (bad_slot && n_tokens > 0) {
        slots[test_rng_int(rng, 0, n_tokens - 1)] = n_slots + test_rng_int(rng, 0, 3);
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    }

    const size_t nk = (size_t)(n_tokens * k_stride), nv = (size_t)(n_tokens * v_stride);
    const size_t cache_n = (size_t)(n_slots * row), cache_bytes = cache_n * pagoda_dtype_size(dtype);
    const size_t act_size = pagoda_dtype_size(act_type(act));
    int k = conf_add_tensor(&c, "k", random_act(rng, act, nk, -3.0f, 3.0f), nk * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int v = conf_add_tensor(&c, "v", random_act(rng, act, nv, -3.0f, 3.0f), nv * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int sm = conf_add_tensor(&c, "slot_mapping", slots, (size_t)n_tokens * sizeof *slots,
                             CONF_DEVICE, CONF_INPUT, 0);
    int kc = conf_add_tensor(&c, "k_cache", conf_random_typed(rng, dtype, cache_n, -1.0f, 1.0f),
                             cache_bytes, CONF_DEVICE, CONF_EXACT, 0);
    int vc = conf_add_tensor(&c, "v_cache", conf_random_typed(rng, dtype, cache_n, -1.0f, 1.0f),
                             cache_bytes, CONF_DEVICE, CONF_EXACT, 0);
    conf_bind(&c, 0, k, offsetof(pagoda_op_kv_write_t, k));
    conf_bind(&c, 0, v, offsetof(pagoda_op_kv_write_t, v));
    conf_bind(&c, 0, sm, offsetof(pagoda_op_kv_write_t, slot_mapping));
    conf_bind(&c, 0, kc, offsetof(pagoda_op_kv_write_t, k_cache));
    conf_bind(&c, 0, vc, offsetof(pagoda_op_kv_write_t, v_cache));
    conf_check_case(&c, tally);
}

/* KV_WRITE with k_rope: the keys rotated on their way into the cache. The rotation's cos/sin may
 * differ from the reference in the last bit of an f32 on another backend (its pow/sincos), so an
 * f32 key cache is compared within f32 tolerance; a bf16/f16 one, and the value cache, byte for
 * byte. (The CPU backend's fused == ROPE-then-KV_WRITE identity, bit for bit, is
 * test_cpu_kv_write's.) */
typedef struct kv_rope_shape {
    pagoda_rope_layout_t layout;
    pagoda_rope_scaling_t scaling;
    int64_t rot_dim; /* 0 = head_dim */
    int freq_factors;
    /* 0: a valid launch; 1: a slot past the cache; 2: a freq_factors entry that is negative. */
    int defect;
} kv_rope_shape_t;

static void kv_write_rope_case(test_rng_t *rng, int64_t n_tokens, int64_t n_kv_heads,
                               int64_t head_dim, int64_t block_size, pagoda_dtype_t dtype,
                               pagoda_dtype_t act, int padded, const kv_rope_shape_t *r,
                               conf_tally_t *tally) {
    const int64_t row = n_kv_heads * head_dim;
    const int64_t k_stride = padded ? row + test_rng_int(rng, 1, 5) : row;
    const int64_t v_stride = padded ? row + 4 : row;
    const int64_t num_blocks = n_tokens / block_size + test_rng_int(rng, 1, 4);
    const int64_t n_slots = num_blocks * block_size;
    const int64_t rot_dim = r->rot_dim ? r->rot_dim : head_dim;
    conf_case_t c;
    conf_case_init(&c, "kv_write k_rope layout=%d scaling=%d rot_dim=%lld%s tokens=%lld "
                   "kv_heads=%lld head_dim=%lld block=%lld cache=%s act=%s%s%s",
                   (int)r->layout, (int)r->scaling, (long long)rot_dim,
                   r->freq_factors ? " freq_factors" : "", (long long)n_tokens,
                   (long long)n_kv_heads, (long long)head_dim, (long long)block_size,
                   pagoda_dtype_name(dtype), act_label(act), padded ? " strided" : "",
                   r->defect == 1   ? " with a slot past the cache"
                   : r->defect == 2 ? " with a negative freq_factors entry"
                                    : "");
    kv_write_step(&c, dtype, act, n_tokens, n_kv_heads, head_dim, block_size, num_blocks,
                  padded ? k_stride : 0, padded ? v_stride : 0);
    int64_t *slots = random_slots(rng, n_slots, n_tokens, 5, 2);
    if (r->defect == 1) slots[test_rng_int(rng, 0, n_tokens - 1)] = n_slots;

    /* The nested struct stays in host memory; its positions and freq_factors are each
     * backend's device buffers, bound into that backend's copy of it. */
    pagoda_op_rope_t *rope = test_xcalloc(1, sizeof *rope);
    int32_t *positions = test_xmalloc((size_t)n_tokens * sizeof *positions);
    float *factors = test_xmalloc((size_t)(rot_dim / 2) * sizeof *factors);
    for (int64_t t = 0; t < n_tokens; ++t)
        positions[t] = (int32_t)(t < 3 ? t : test_rng_int(rng, 0, 131071));
    for (int64_t i = 0; i < rot_dim / 2; ++i) factors[i] = test_rng_uniform(rng, 0.5f, 40.0f);
    if (r->defect == 2) factors[test_rng_int(rng, 0, rot_dim / 2 - 1)] = -1.0f;
    rope->struct_size = sizeof *rope;
    rope->layout = r->layout;
    rope->scaling = r->scaling;
    rope->head_dim = head_dim;
    rope->rot_dim = r->rot_dim;
    rope->theta = r->scaling == PAGODA_ROPE_SCALING_NONE ? 10000.0f : 500000.0f;
    rope->factor = r->scaling == PAGODA_ROPE_SCALING_LINEAR ? 2.0f : 8.0f;
    rope->low_freq_factor = 1.0f;
    rope->high_freq_factor = 4.0f;
    rope->original_max_position = 8192;
    /* Not this op's: KV_WRITE's keys are `k`, of its own act_dtype (ops.h ignores the rest). */
    if (act_type(act) != PAGODA_DTYPE_F32)
        rope->act_dtype = act == PAGODA_DTYPE_BF16 ? PAGODA_DTYPE_F16 : PAGODA_DTYPE_BF16;
    const int nested = conf_add_nested(&c, 0, offsetof(pagoda_op_kv_write_t, k_rope), rope,
                                       sizeof *rope);
    if (r->defect != 0) c.expect = PAGODA_ERR_INVALID_ARGUMENT;

    const size_t nk = (size_t)(n_tokens * k_stride), nv = (size_t)(n_tokens * v_stride);
    const size_t cache_n = (size_t)(n_slots * row), cache_bytes = cache_n * pagoda_dtype_size(dtype);
    const size_t act_size = pagoda_dtype_size(act_type(act));
    int k = conf_add_tensor(&c, "k", random_act(rng, act, nk, -3.0f, 3.0f), nk * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int v = conf_add_tensor(&c, "v", random_act(rng, act, nv, -3.0f, 3.0f), nv * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int sm = conf_add_tensor(&c, "slot_mapping", slots, (size_t)n_tokens * sizeof *slots,
                             CONF_DEVICE, CONF_INPUT, 0);
    const int f32_keys = dtype == PAGODA_DTYPE_F32;
    int kc = conf_add_tensor(&c, "k_cache", conf_random_typed(rng, dtype, cache_n, -1.0f, 1.0f),
                             cache_bytes, CONF_DEVICE, f32_keys ? CONF_F32 : CONF_EXACT,
                             f32_keys ? conf_tolerance(PAGODA_DTYPE_F32) : 0);
    int vc = conf_add_tensor(&c, "v_cache", conf_random_typed(rng, dtype, cache_n, -1.0f, 1.0f),
                             cache_bytes, CONF_DEVICE, CONF_EXACT, 0);
    conf_bind(&c, 0, k, offsetof(pagoda_op_kv_write_t, k));
    conf_bind(&c, 0, v, offsetof(pagoda_op_kv_write_t, v));
    conf_bind(&c, 0, sm, offsetof(pagoda_op_kv_write_t, slot_mapping));
    conf_bind(&c, 0, kc, offsetof(pagoda_op_kv_write_t, k_cache));
    conf_bind(&c, 0, vc, offsetof(pagoda_op_kv_write_t, v_cache));
    int pos = conf_add_tensor(&c, "k_rope.positions", positions,
                              (size_t)n_tokens * sizeof *positions, CONF_DEVICE, CONF_INPUT, 0);
    conf_bind_nested(&c, nested, pos, offsetof(pagoda_op_rope_t, positions));
    if (r->freq_factors) {
        int ff = conf_add_tensor(&c, "k_rope.freq_factors", factors,
                                 (size_t)(rot_dim / 2) * sizeof *factors, CONF_DEVICE, CONF_INPUT,
                                 0);
        conf_bind_nested(&c, nested, ff, offsetof(pagoda_op_rope_t, freq_factors));
    } else {
        free(factors);
    }
    conf_check_case(&c, tally);
}

/* `supports` on k_rope descriptors, which every backend can answer (no pointer is read): the
 * rotation checked as ROPE's, the nested struct read by its own struct_size, and fields newer
 * than a backend refused when set, on the op's struct and on the nested one alike. */
static void kv_write_rope_descriptors(conf_tally_t *tally) {
    pagoda_op_rope_t rope;
    memset(&rope, 0, sizeof rope);
    rope.struct_size = sizeof rope;
    rope.layout = PAGODA_ROPE_HALF_SPLIT;
    rope.scaling = PAGODA_ROPE_SCALING_LLAMA3;
    rope.head_dim = 128;
    rope.theta = 500000.0f;
    rope.factor = 8.0f;
    rope.low_freq_factor = 1.0f;
    rope.high_freq_factor = 4.0f;
    rope.original_max_position = 8192;
    struct {
        pagoda_op_kv_write_t w;
        uint64_t later_field;
    } op;
    memset(&op, 0, sizeof op);
    op.w.struct_size = sizeof op.w;
    op.w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    op.w.cache_dtype = PAGODA_DTYPE_BF16;
    op.w.n_tokens = 7;
    op.w.n_kv_heads = 8;
    op.w.head_dim = 128;
    op.w.block_size = 16;
    op.w.num_blocks = 64;
    op.w.k_rope = &rope;
    const pagoda_op_t kw = PAGODA_OP_KV_WRITE;
    conf_check_supports("k_rope llama3", kw, &op.w, 1, tally);
    rope.rot_dim = 64;
    rope.layout = PAGODA_ROPE_INTERLEAVED;
    conf_check_supports("k_rope rot_dim 64 interleaved", kw, &op.w, 1, tally);
    rope.rot_dim = 63;
    conf_check_supports("k_rope rot_dim 63", kw, &op.w, 0, tally);
    rope.rot_dim = 130;
    conf_check_supports("k_rope rot_dim 130", kw, &op.w, 0, tally);
    rope.rot_dim = 0;
    rope.head_dim = 64;
    conf_check_supports("k_rope head_dim 64 of 128", kw, &op.w, 0, tally);
    rope.head_dim = 128;
    rope.layout = (pagoda_rope_layout_t)5;
    conf_check_supports("k_rope layout 5", kw, &op.w, 0, tally);
    rope.layout = PAGODA_ROPE_HALF_SPLIT;
    rope.low_freq_factor = 4.0f;
    conf_check_supports("k_rope low = high freq factor", kw, &op.w, 0, tally);
    rope.low_freq_factor = 1.0f;
    rope.theta = 0.0f;
    conf_check_supports("k_rope theta 0", kw, &op.w, 0, tally);
    rope.theta = 500000.0f;
    rope.struct_size = 8;
    conf_check_supports("k_rope struct_size 8", kw, &op.w, 0, tally);
    rope.struct_size = sizeof rope;
    /* A newer caller's struct: accepted while the fields it adds are zero. */
    op.w.struct_size = sizeof op;
    conf_check_supports("struct_size + 8, zero", kw, &op.w, 1, tally);
    op.later_field = 1;
    conf_check_supports("struct_size + 8, set", kw, &op.w, 0, tally);
    op.w.struct_size = sizeof op.w;
    conf_check_supports("struct_size as known, later bytes not read", kw, &op.w, 1, tally);
    rope.rot_dim = 63; /* invalid, but an ABI 1.0 struct_size leaves k_rope out */
    op.w.struct_size = (uint32_t)offsetof(pagoda_op_kv_write_t, k_rope);
    conf_check_supports("ABI 1.0 struct_size ignores k_rope", kw, &op.w, 1, tally);
}

static void kv_write_rope_cases(test_rng_t *rng, conf_tally_t *tally) {
    kv_write_rope_descriptors(tally);
    static const pagoda_rope_layout_t layouts[] = {PAGODA_ROPE_HALF_SPLIT,
                                                   PAGODA_ROPE_INTERLEAVED};
    static const pagoda_rope_scaling_t scalings[] = {
        PAGODA_ROPE_SCALING_NONE, PAGODA_ROPE_SCALING_LINEAR, PAGODA_ROPE_SCALING_LLAMA3};
    static const int64_t head_dims[] = {64, 128, 40, 96, 2, 6};
    static const int64_t block_sizes[] = {16, 1, 32, 3, 128, 8};
    for (int i = 0; i < 36; ++i) {
        const int64_t head_dim = head_dims[i % 6];
        /* Whole heads, half of one (rounded to even), and a single pair. */
        const int64_t partial = head_dim / 2 - (head_dim / 2) % 2;
        const int64_t rot_dims[] = {0, partial > 0 ? partial : 2, 2};
        const kv_rope_shape_t r = {layouts[i % 2], scalings[(i / 2) % 3], rot_dims[(i / 6) % 3],
                                   i % 4 == 3, 0};
        kv_write_rope_case(rng, test_rng_int(rng, 1, 90), test_rng_int(rng, 1, 8), head_dim,
                           block_sizes[(i / 3) % 6], kTypes[i % 3], PAGODA_DTYPE_INVALID,
                           (i / 5) % 2, &r, tally);
    }
    for (size_t d = 0; d < 3; ++d) {
        const kv_rope_shape_t llama = {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LLAMA3, 0, 1,
                                       0};
        kv_write_rope_case(rng, 512, 8, 128, 16, kTypes[d], PAGODA_DTYPE_INVALID, 0, &llama,
                           tally);
        const kv_rope_shape_t bad_slot = {PAGODA_ROPE_INTERLEAVED, PAGODA_ROPE_SCALING_NONE, 0,
                                          0, 1};
        kv_write_rope_case(rng, 21, 4, 64, 32, kTypes[d], PAGODA_DTYPE_INVALID, 1, &bad_slot,
                           tally);
        const kv_rope_shape_t bad_factor = {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_NONE, 0,
                                            1, 2};
        kv_write_rope_case(rng, 9, 2, 64, 16, kTypes[d], PAGODA_DTYPE_INVALID, 0, &bad_factor,
                           tally);
    }
    /* bf16/f16 keys: rotated in f32 from the widened values, rounded once to the cache. */
    for (int i = 0; i < 12; ++i) {
        const int64_t head_dim = head_dims[i % 6];
        /* Every third case rotates half a head (rounded to even) where that leaves a pair. */
        const int64_t half = head_dim / 2 - (head_dim / 2) % 2;
        const int64_t rot_dim = i % 3 == 2 && half >= 2 ? half : 0;
        const kv_rope_shape_t r = {layouts[i % 2], scalings[(i / 2) % 3], rot_dim, i % 4 == 1, 0};
        kv_write_rope_case(rng, test_rng_int(rng, 1, 90), test_rng_int(rng, 1, 8), head_dim,
                           block_sizes[i % 6], kTypes[i % 3], kTypes[1 + i % 2], i % 2, &r,
                           tally);
    }
}

/* `supports` on act_dtype: f32 (or 0), bf16 and f16 taken, any other type refused, on both ops;
 * an ABI 1.0 struct_size (ending before the field) reads it as 0. */
static void act_dtype_descriptors(conf_tally_t *tally) {
    pagoda_op_kv_write_t w;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    w.cache_dtype = PAGODA_DTYPE_BF16;
    w.n_tokens = 7;
    w.n_kv_heads = 8;
    w.head_dim = 128;
    w.block_size = 16;
    w.num_blocks = 64;
    pagoda_op_paged_attention_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = PAGODA_DTYPE_F16;
    a.causal = 1;
    a.n_seqs = 4;
    a.n_q_heads = 32;
    a.n_kv_heads = 8;
    a.head_dim = 128;
    a.block_size = 16;
    a.num_blocks = 64;
    a.max_blocks_per_seq = 16;
    a.scale = 0.088f;
    static const struct {
        pagoda_dtype_t act;
        int valid;
    } acts[] = {{PAGODA_DTYPE_INVALID, 1}, {PAGODA_DTYPE_F32, 1}, {PAGODA_DTYPE_BF16, 1},
                {PAGODA_DTYPE_F16, 1},     {PAGODA_DTYPE_I32, 0}, {PAGODA_DTYPE_U8, 0},
                {(pagoda_dtype_t)42, 0}};
    char label[64];
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; ++i) {
        snprintf(label, sizeof label, "kv_write act_dtype %d", (int)acts[i].act);
        w.act_dtype = acts[i].act;
        conf_check_supports(label, PAGODA_OP_KV_WRITE, &w, acts[i].valid, tally);
        snprintf(label, sizeof label, "paged_attention act_dtype %d", (int)acts[i].act);
        a.act_dtype = acts[i].act;
        conf_check_supports(label, PAGODA_OP_PAGED_ATTENTION, &a, acts[i].valid, tally);
    }
    w.struct_size = (uint32_t)offsetof(pagoda_op_kv_write_t, act_dtype);
    conf_check_supports("kv_write struct_size before act_dtype", PAGODA_OP_KV_WRITE, &w, 1, tally);
    a.struct_size = (uint32_t)offsetof(pagoda_op_paged_attention_t, act_dtype);
    conf_check_supports("paged_attention ABI 1.0 struct_size", PAGODA_OP_PAGED_ATTENTION, &a, 1,
                        tally);
}

void conf_cases_kv_write(conf_tally_t *tally) {
    act_dtype_descriptors(tally);
    test_rng_t rng;
    test_rng_seed(&rng, 0x6b7677ull);
    static const int64_t block_sizes[] = {1, 16, 32, 8, 3, 128};
    static const int64_t head_dims[] = {64, 128, 5, 40, 96, 1};
    for (int i = 0; i < 36; ++i)
        kv_write_case(&rng, test_rng_int(&rng, 1, 90), test_rng_int(&rng, 1, 8),
                      head_dims[test_rng_int(&rng, 0, 5)], block_sizes[i % 6], kTypes[i % 3],
                      PAGODA_DTYPE_INVALID, (i / 3) % 2, 0, tally);
    for (size_t d = 0; d < 3; ++d) {
        /* nothing to write */
        kv_write_case(&rng, 0, 2, 64, 16, kTypes[d], PAGODA_DTYPE_INVALID, 0, 0, tally);
        kv_write_case(&rng, 512, 8, 128, 16, kTypes[d], PAGODA_DTYPE_INVALID, 0, 0, tally);
        kv_write_case(&rng, 21, 4, 64, 32, kTypes[d], PAGODA_DTYPE_INVALID, 1, 1, tally);
    }
    /* bf16/f16 keys and values (and f32 named explicitly) into every cache type. */
    for (int i = 0; i < 18; ++i)
        kv_write_case(&rng, test_rng_int(&rng, 1, 90), test_rng_int(&rng, 1, 8),
                      head_dims[test_rng_int(&rng, 0, 5)], block_sizes[i % 6], kTypes[i % 3],
                      kTypes[(i / 3) % 3], i % 2, i == 17, tally);
    kv_write_rope_cases(&rng, tally);
}
