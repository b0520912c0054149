/* KV_WRITE and PAGED_ATTENTION cases.
 *
 * KV_WRITE: every cache type, block sizes 1/16/32 and others, padding slots, padded token
 * strides, no tokens at all, and a slot past the cache (refused by both), with f32 (act_dtype 0,
 * as an ABI 1.0 caller leaves it), bf16 and f16 keys and values. The caches must come out bit
 * for bit equal: rounding to bf16/f16 is round-to-nearest-even everywhere.
 *
 * PAGED_ATTENTION: physical blocks shuffled, slots no query may see (past a context, inside a
 * block) hold NaN, and table entries no query may see (past a context, wholly behind every
 * window, or of a sequence without queries) hold ids outside the pool, so a kernel that reads
 * what ops.h says it must not read shows up. Batches mix decode, chunked prefill, whole prompts
 * and sequences without queries, over GQA ratios, block sizes, sliding windows, head sizes and
 * long contexts (the decode kernel's split over the context), with f32, bf16 and f16 queries
 * and outputs (a half output may differ by one rounding of its own type). */
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

/* ------------------------------------------------------------------------------------------ */
/* PAGED_ATTENTION                                                                             */
/* ------------------------------------------------------------------------------------------ */

enum { MAX_SEQS = 96 };

typedef struct attention_shape {
    int n_seqs;
    int q_lens[MAX_SEQS], ctx_lens[MAX_SEQS];
    int n_q_heads, n_kv_heads, head_dim, block_size;
    pagoda_dtype_t dtype;
    pagoda_dtype_t act; /* of q and out; 0 = f32 */
    int causal, sliding_window, padded, give_max_context;
    /* 0: a valid batch; 1: a visible block id past the pool; 2: a context past the table. */
    int defect;
} attention_shape_t;

/* The first key position any query of a sequence can see (ops.h's window rule). */
static int64_t first_visible(const attention_shape_t *s, int seq) {
    const int64_t first_query_pos = (int64_t)s->ctx_lens[seq] - s->q_lens[seq];
    if (s->sliding_window <= 0) return 0;
    const int64_t first = first_query_pos - s->sliding_window + 1;
    return first > 0 ? first : 0;
}

/* Stores f32 value `x` as element `i` of a `dtype` array. */
static void store_typed(void *base, pagoda_dtype_t dtype, size_t i, float x) {
    test_convert_weights(dtype, &x, 1, (char *)base + i * pagoda_dtype_size(dtype), NULL);
}

static void attention_case(test_rng_t *rng, const attention_shape_t *s, const char *what,
                           conf_tally_t *tally) {
    const int64_t bs = s->block_size, d = s->head_dim, kv = s->n_kv_heads;
    int64_t max_blocks = 1, needed = 0, total_q = 0, max_ctx = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        const int64_t nb = (s->ctx_lens[i] + bs - 1) / bs;
        needed += nb;
        if (nb > max_blocks) max_blocks = nb;
        total_q += s->q_lens[i];
        if (s->ctx_lens[i] > max_ctx) max_ctx = s->ctx_lens[i];
    }
    max_blocks += 1; /* a trailing entry per row that nobody may read */
    const int64_t num_blocks = needed + 3;

    conf_case_t c;
    conf_case_init(&c, "paged_attention %s: seqs=%d heads=%d/%d head_dim=%d block=%d cache=%s "
                   "act=%s causal=%d window=%d%s (q_len,ctx of seq 0: %d,%d)",
                   what, s->n_seqs, s->n_q_heads, s->n_kv_heads, s->head_dim, s->block_size,
                   pagoda_dtype_name(s->dtype), act_label(s->act), s->causal, s->sliding_window,
                   s->padded ? " strided" : "", s->q_lens[0], s->ctx_lens[0]);
    pagoda_op_paged_attention_t *a = &conf_add_step(&c, PAGODA_OP_PAGED_ATTENTION)->attention;
    a->layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a->cache_dtype = s->dtype;
    a->causal = (uint32_t)s->causal;
    a->n_seqs = s->n_seqs;
    a->n_q_heads = s->n_q_heads;
    a->n_kv_heads = s->n_kv_heads;
    a->head_dim = d;
    a->block_size = bs;
    a->num_blocks = num_blocks;
    a->max_blocks_per_seq = max_blocks;
    a->max_context_len = s->give_max_context ? max_ctx : 0;
    a->scale = 1.0f / sqrtf((float)d);
    a->sliding_window = s->sliding_window;
    a->act_dtype = s->act;

    /* Block tables over a shuffled pool; unreadable entries get ids outside the pool. */
    int32_t *perm = test_xmalloc((size_t)num_blocks * sizeof *perm);
    for (int64_t i = 0; i < num_blocks; ++i) perm[i] = (int32_t)i;
    for (int64_t i = num_blocks - 1; i > 0; --i) {
        const int64_t j = test_rng_int(rng, 0, i);
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int32_t *tables = test_xmalloc((size_t)(s->n_seqs * max_blocks) * sizeof *tables);
    int64_t next = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        const int64_t nb = (s->ctx_lens[i] + bs - 1) / bs;
        const int64_t first_block = first_visible(s, i) / bs;
        for (int64_t j = 0; j < max_blocks; ++j) {
            int32_t *entry = &tables[i * max_blocks + j];
            if (j >= nb) {
                *entry = -1;
            } else {
                *entry = perm[next++];
                /* Nobody reads it: behind every window, or the sequence has no queries. */
                if (s->q_lens[i] == 0 || j < first_block) *entry = (int32_t)(num_blocks + 1000 + j);
            }
        }
    }

    /* The caches: NaN everywhere, then each sequence's context from random values. */
    const size_t esize = pagoda_dtype_size(s->dtype);
    const size_t cache_n = (size_t)(num_blocks * kv * bs * d);
    unsigned char *k_cache = test_xmalloc(cache_n * esize), *v_cache = test_xmalloc(cache_n * esize);
    memset(k_cache, 0xFF, cache_n * esize);
    memset(v_cache, 0xFF, cache_n * esize);
    for (int i = 0; i < s->n_seqs; ++i) {
        for (int64_t pos = 0; pos < s->ctx_lens[i]; ++pos) {
            const int64_t id = tables[i * max_blocks + pos / bs];
            if (id < 0 || id >= num_blocks) continue; /* an entry nobody reads */
            for (int64_t h = 0; h < kv; ++h)
                for (int64_t e = 0; e < d; ++e) {
                    const size_t at = (size_t)((((id * kv + h) * bs) + pos % bs) * d + e);
                    store_typed(k_cache, s->dtype, at, test_rng_uniform(rng, -1.0f, 1.0f));
                    store_typed(v_cache, s->dtype, at, test_rng_uniform(rng, -1.0f, 1.0f));
                }
        }
    }
    free(perm);

    int32_t *context_lens = test_xmalloc((size_t)s->n_seqs * sizeof *context_lens);
    int32_t *query_start = test_xmalloc((size_t)(s->n_seqs + 1) * sizeof *query_start);
    query_start[0] = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        context_lens[i] = s->ctx_lens[i];
        query_start[i + 1] = query_start[i] + s->q_lens[i];
    }
    if (s->defect == 1) {
        /* The last visible block of the first sequence with queries names a block past the pool. */
        for (int i = 0; i < s->n_seqs; ++i)
            if (s->q_lens[i] > 0) {
                tables[i * max_blocks + (s->ctx_lens[i] - 1) / bs] = (int32_t)num_blocks;
                break;
            }
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    } else if (s->defect == 2) {
        context_lens[s->n_seqs - 1] = (int32_t)(max_blocks * bs + 1);
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    }

    const int64_t row = (int64_t)s->n_q_heads * d;
    const int64_t q_stride = s->padded ? row + test_rng_int(rng, 1, 9) : row;
    const int64_t o_stride = s->padded ? row + test_rng_int(rng, 1, 9) : row;
    a->q_token_stride = s->padded ? q_stride : 0;
    a->out_token_stride = s->padded ? o_stride : 0;
    const size_t nq = (size_t)(total_q * q_stride), no = (size_t)(total_q * o_stride);
    /* A half output may also differ by one rounding of its own type. */
    const pagoda_dtype_t act = act_type(s->act);
    const double cache_tol = conf_tolerance(s->dtype), act_tol = conf_tolerance(act);
    const double tol = cache_tol > act_tol ? cache_tol : act_tol;
    const conf_compare_t out_compare = act == PAGODA_DTYPE_BF16  ? CONF_BF16
                                       : act == PAGODA_DTYPE_F16 ? CONF_F16
                                                                 : CONF_F32;
    const size_t act_size = pagoda_dtype_size(act);
    int q = conf_add_tensor(&c, "q", random_act(rng, act, nq, -2.0f, 2.0f), nq * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int kc = conf_add_tensor(&c, "k_cache", k_cache, cache_n * esize, CONF_DEVICE, CONF_INPUT, 0);
    int vc = conf_add_tensor(&c, "v_cache", v_cache, cache_n * esize, CONF_DEVICE, CONF_INPUT, 0);
    int bt = conf_add_tensor(&c, "block_tables", tables,
                             (size_t)(s->n_seqs * max_blocks) * sizeof *tables, CONF_DEVICE,
                             CONF_INPUT, 0);
    int cl = conf_add_tensor(&c, "context_lens", context_lens,
                             (size_t)s->n_seqs * sizeof *context_lens, CONF_DEVICE, CONF_INPUT, 0);
    int qs = conf_add_tensor(&c, "query_start", query_start,
                             (size_t)(s->n_seqs + 1) * sizeof *query_start, CONF_DEVICE,
                             CONF_INPUT, 0);
    int out = conf_add_tensor(&c, "out", random_act(rng, act, no, -1.0f, 1.0f), no * act_size,
                              CONF_DEVICE, out_compare, tol);
    conf_bind(&c, 0, q, offsetof(pagoda_op_paged_attention_t, q));
    conf_bind(&c, 0, kc, offsetof(pagoda_op_paged_attention_t, k_cache));
    conf_bind(&c, 0, vc, offsetof(pagoda_op_paged_attention_t, v_cache));
    conf_bind(&c, 0, bt, offsetof(pagoda_op_paged_attention_t, block_tables));
    conf_bind(&c, 0, cl, offsetof(pagoda_op_paged_attention_t, context_lens));
    conf_bind(&c, 0, qs, offsetof(pagoda_op_paged_attention_t, query_start));
    conf_bind(&c, 0, out, offsetof(pagoda_op_paged_attention_t, out));
    conf_check_case(&c, tally);
}

/* A random batch: each sequence decodes, continues a prompt in a chunk, starts one, or waits. */
static void random_batch(test_rng_t *rng, attention_shape_t *s, int n_seqs, int max_ctx) {
    s->n_seqs = n_seqs;
    int any_query = 0;
    for (int i = 0; i < n_seqs; ++i) {
        const int ctx = (int)test_rng_int(rng, 1, max_ctx);
        int q_len;
        switch (test_rng_int(rng, 0, 5)) {
            case 0: q_len = ctx; break;                                  /* whole prompt */
            case 1: q_len = (int)test_rng_int(rng, 1, ctx); break;       /* chunk */
            case 2: q_len = 0; break;                                    /* no queries */
            default: q_len = 1; break;                                   /* decode */
        }
        if (q_len > 64) q_len = 64 + (q_len % 64); /* keep the reference quick */
        s->ctx_lens[i] = ctx;
        s->q_lens[i] = q_len;
        any_query |= q_len > 0;
    }
    if (!any_query) s->q_lens[0] = 1;
}

static const int kGqa[][2] = {{4, 4}, {8, 2}, {8, 1}, {16, 2}, {32, 4}, {12, 3}, {6, 6}, {8, 4}};

/* Mixed batches over head sizes GPUs are built for (64, 128, and the others Llama-family models
 * use), block sizes 1/16/32, every cache type, GQA ratios 1 to 8 and MQA. */
void conf_cases_paged_attention(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x617474ull);
    static const int head_dims[] = {64, 128, 80, 96, 256};
    static const int block_sizes[] = {16, 32, 1};
    static const int windows[] = {0, 0, 0, 1, 7, 33, 100};
    for (int i = 0; i < 45; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 6), i % 9 == 8 ? 900 : 200);
        const int g = (int)test_rng_int(&rng, 0, 7);
        s.n_q_heads = kGqa[g][0];
        s.n_kv_heads = kGqa[g][1];
        s.head_dim = head_dims[i % 5];
        s.block_size = block_sizes[i % 3];
        s.dtype = kTypes[(i / 3) % 3];
        s.causal = i % 8 != 7;
        s.sliding_window = windows[test_rng_int(&rng, 0, 6)];
        s.padded = i % 4 == 1;
        s.give_max_context = i % 2;
        attention_case(&rng, &s, "mixed batch", tally);
    }
    /* Decode at batch sizes up to 96 and contexts long enough for a split over the context. */
    for (size_t dt = 0; dt < 3; ++dt) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = 96;
        for (int i = 0; i < s.n_seqs; ++i) {
            s.q_lens[i] = 1;
            s.ctx_lens[i] = (int)test_rng_int(&rng, 1, 300);
        }
        s.n_q_heads = 32;
        s.n_kv_heads = 8;
        s.head_dim = 128;
        s.block_size = dt == 2 ? 32 : 16;
        s.dtype = kTypes[dt];
        s.causal = 1;
        s.give_max_context = 1;
        attention_case(&rng, &s, "decode batch", tally);

        memset(&s, 0, sizeof s);
        s.n_seqs = 3;
        const int long_ctx[] = {4097, 6000, 1};
        for (int i = 0; i < 3; ++i) {
            s.q_lens[i] = 1;
            s.ctx_lens[i] = long_ctx[i];
        }
        s.n_q_heads = 8;
        s.n_kv_heads = 1;
        s.head_dim = 128;
        s.block_size = 16 << (dt % 2);
        s.dtype = kTypes[dt];
        s.causal = 1;
        s.give_max_context = dt != 1;
        attention_case(&rng, &s, "long decode", tally);

        /* A 384-token chunk after 716 cached tokens: the prefill kernel's tiles, causal with
         * the query offset; and the same with a sliding window. */
        memset(&s, 0, sizeof s);
        s.n_seqs = 2;
        s.q_lens[0] = 384;
        s.ctx_lens[0] = 1100;
        s.q_lens[1] = 129;
        s.ctx_lens[1] = 129;
        s.n_q_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 128;
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.causal = 1;
        attention_case(&rng, &s, "chunked prefill", tally);
        s.sliding_window = 256;
        s.padded = 1;
        attention_case(&rng, &s, "chunked prefill, window", tally);
    }
    /* bf16/f16 queries and outputs: mixed batches, and a long decode whose split partials
     * are merged in f32 before the output's one rounding. */
    for (int i = 0; i < 18; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 6), i % 6 == 5 ? 900 : 200);
        const int g = (int)test_rng_int(&rng, 0, 7);
        s.n_q_heads = kGqa[g][0];
        s.n_kv_heads = kGqa[g][1];
        s.head_dim = head_dims[i % 5];
        s.block_size = block_sizes[i % 3];
        s.dtype = kTypes[(i / 2) % 3];
        s.act = kTypes[1 + i % 2];
        s.causal = i % 7 != 6;
        s.sliding_window = windows[test_rng_int(&rng, 0, 6)];
        s.padded = i % 4 == 1;
        s.give_max_context = i % 2;
        attention_case(&rng, &s, "mixed batch, half act", tally);
    }
    for (size_t dt = 0; dt < 3; ++dt) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = 2;
        s.q_lens[0] = s.q_lens[1] = 1;
        s.ctx_lens[0] = 5000;
        s.ctx_lens[1] = 700;
        s.n_q_heads = 8;
        s.n_kv_heads = 1;
        s.head_dim = 128;
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.act = kTypes[1 + dt % 2];
        s.causal = 1;
        s.padded = 1;
        s.give_max_context = 1;
        attention_case(&rng, &s, "long decode, half act", tally);
    }
    /* Ids the reference refuses must be refused by every backend. */
    for (int defect = 1; defect <= 2; ++defect) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, 4, 100);
        s.n_q_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 64;
        s.block_size = 16;
        s.dtype = PAGODA_DTYPE_BF16;
        s.causal = 1;
        s.defect = defect;
        attention_case(&rng, &s, defect == 1 ? "bad block id" : "context past the table", tally);
    }
}

/* Head sizes off the usual ones (small, odd, not a multiple of a vector), and block sizes that
 * divide no tile; a backend may not support every one, but must say so as the reference would. */
void conf_cases_paged_attention_odd(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x6f6464ull);
    static const int head_dims[] = {8, 5, 40, 36, 72, 112, 160, 192};
    static const int block_sizes[] = {3, 8, 48, 128, 2};
    for (int i = 0; i < 24; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 4), 150);
        s.n_q_heads = kGqa[i % 8][0];
        s.n_kv_heads = kGqa[i % 8][1];
        s.head_dim = head_dims[i % 8];
        s.block_size = block_sizes[i % 5];
        s.dtype = kTypes[i % 3];
        s.causal = i % 5 != 4;
        s.sliding_window = i % 6 == 5 ? 9 : 0;
        s.padded = i % 2;
        s.give_max_context = 1;
        s.act = i % 3 == 1 ? kTypes[1 + (i / 3) % 2] : PAGODA_DTYPE_INVALID;
        attention_case(&rng, &s, "odd shape", tally);
    }
}
