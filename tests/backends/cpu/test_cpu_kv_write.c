/* KV_WRITE on the CPU backend: tokens land in their slots of the paged layout
 * [num_blocks][n_kv_heads][block_size][head_dim] in the cache dtype, padding slots are skipped,
 * every other byte of the caches is left alone, and a bad launch writes nothing. With k_rope the
 * caches come out byte for byte as after ROPE on a copy of the keys followed by a plain write,
 * and the keys themselves are left alone. Keys and values may be bf16/f16 (act_dtype): widened
 * exactly and rounded once to the cache's type, also through the rotation. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { HEADS = 3, DIM = 20, BLOCK = 4, BLOCKS = 6, TOKENS = 10, PAD = 3 };
#define ROW (HEADS * DIM)
#define K_STRIDE (ROW + PAD) /* k rows are padded; v rows are packed */

typedef struct kv_setup {
    float k[TOKENS * K_STRIDE];
    float v[TOKENS * ROW];
    int64_t slots[TOKENS];
    size_t cache_bytes;
    unsigned char *k_cache, *v_cache;
    pagoda_op_kv_write_t args;
} kv_setup_t;

/* Random K/V, slots drawn without repeats from a shuffled list with padding among them, and
 * caches holding a byte pattern that no write produces by chance. */
static void setup_make(kv_setup_t *s, pagoda_dtype_t dtype, uint64_t seed) {
    test_rng_t rng;
    test_rng_seed(&rng, seed);
    test_fill_uniform(&rng, s->k, TOKENS * K_STRIDE, -3.0f, 3.0f);
    test_fill_uniform(&rng, s->v, TOKENS * ROW, -3.0f, 3.0f);
    int64_t all[BLOCKS * BLOCK];
    for (int i = 0; i < BLOCKS * BLOCK; ++i) all[i] = i;
    for (int i = BLOCKS * BLOCK - 1; i > 0; --i) {
        int64_t j = test_rng_int(&rng, 0, i), t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    for (int t = 0; t < TOKENS; ++t) s->slots[t] = (t % 4 == 1) ? -1 - t : all[t];
    s->cache_bytes = (size_t)BLOCKS * BLOCK * ROW * pagoda_dtype_size(dtype);
    s->k_cache = test_xmalloc(s->cache_bytes);
    s->v_cache = test_xmalloc(s->cache_bytes);
    memset(s->k_cache, 0x5A, s->cache_bytes);
    memset(s->v_cache, 0x5A, s->cache_bytes);

    memset(&s->args, 0, sizeof s->args);
    s->args.struct_size = sizeof s->args;
    s->args.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    s->args.cache_dtype = dtype;
    s->args.n_tokens = TOKENS;
    s->args.n_kv_heads = HEADS;
    s->args.head_dim = DIM;
    s->args.block_size = BLOCK;
    s->args.num_blocks = BLOCKS;
    s->args.k = s->k;
    s->args.k_token_stride = K_STRIDE;
    s->args.v = s->v;
    s->args.v_token_stride = 0;
    s->args.k_cache = s->k_cache;
    s->args.v_cache = s->v_cache;
    s->args.slot_mapping = s->slots;
}

static void setup_free(kv_setup_t *s) {
    free(s->k_cache);
    free(s->v_cache);
}

/* The caches as they should be after the write, built with the tests' own conversions. */
static unsigned char *expected_cache(const kv_setup_t *s, const float *x, int64_t stride) {
    const pagoda_dtype_t dtype = s->args.cache_dtype;
    const size_t elem = pagoda_dtype_size(dtype);
    unsigned char *want = test_xmalloc(s->cache_bytes);
    memset(want, 0x5A, s->cache_bytes);
    for (int t = 0; t < TOKENS; ++t) {
        if (s->slots[t] < 0) continue;
        const int64_t block = s->slots[t] / BLOCK, offset = s->slots[t] % BLOCK;
        for (int h = 0; h < HEADS; ++h) {
            const int64_t row = ((block * HEADS + h) * BLOCK + offset) * DIM;
            test_convert_weights(dtype, x + t * stride + h * DIM, DIM, want + row * elem, NULL);
        }
    }
    return want;
}

static void test_writes_slots(void **state) {
    (void)state;
    static const pagoda_dtype_t dtypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (size_t i = 0; i < 3; ++i) {
        kv_setup_t *s = test_xcalloc(1, sizeof *s);
        setup_make(s, dtypes[i], 10 + i);
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_KV_WRITE, &s->args));
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args));
        unsigned char *want_k = expected_cache(s, s->k, K_STRIDE);
        unsigned char *want_v = expected_cache(s, s->v, ROW);
        const int k_same = memcmp(want_k, s->k_cache, s->cache_bytes) == 0;
        const int v_same = memcmp(want_v, s->v_cache, s->cache_bytes) == 0;
        free(want_k);
        free(want_v);
        setup_free(s);
        free(s);
        if (!k_same || !v_same)
            fail_msg("%s cache: %s cache differs from the expected bytes",
                     pagoda_dtype_name(dtypes[i]), k_same ? "v" : "k");
    }
}

/* A slot past the cache fails naming the token and slot, and nothing is written, not even the
 * valid tokens before it. */
static void test_slot_out_of_range(void **state) {
    (void)state;
    kv_setup_t *s = test_xcalloc(1, sizeof *s);
    setup_make(s, PAGODA_DTYPE_F32, 20);
    s->slots[7] = BLOCKS * BLOCK;
    unsigned char *before = test_xmalloc(s->cache_bytes);
    memcpy(before, s->k_cache, s->cache_bytes);
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args), PAGODA_ERR_INVALID_ARGUMENT,
                        "slot_mapping[7] = 24");
    assert_memory_equal(before, s->k_cache, s->cache_bytes);
    assert_memory_equal(before, s->v_cache, s->cache_bytes);
    free(before);
    setup_free(s);
    free(s);
}

static void test_bad_descriptors(void **state) {
    (void)state;
    kv_setup_t *s = test_xcalloc(1, sizeof *s);
    setup_make(s, PAGODA_DTYPE_BF16, 30);
    const pagoda_op_kv_write_t good = s->args;
    pagoda_op_kv_write_t a;

#define EXPECT_BAD(field, value, status, needle)                                        \
    do {                                                                                \
        a = good;                                                                       \
        a.field = value;                                                                \
        test_expect_failure(test_cpu_supports(PAGODA_OP_KV_WRITE, &a), status, needle); \
        test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &a), status, needle);   \
    } while (0)

    EXPECT_BAD(block_size, 0, PAGODA_ERR_INVALID_ARGUMENT, "block_size 0");
    EXPECT_BAD(block_size, 129, PAGODA_ERR_INVALID_ARGUMENT, "block_size 129");
    EXPECT_BAD(n_kv_heads, 0, PAGODA_ERR_INVALID_ARGUMENT, "n_kv_heads 0");
    EXPECT_BAD(head_dim, -4, PAGODA_ERR_INVALID_ARGUMENT, "head_dim -4");
    EXPECT_BAD(n_tokens, -1, PAGODA_ERR_INVALID_ARGUMENT, "n_tokens -1");
    EXPECT_BAD(num_blocks, -1, PAGODA_ERR_INVALID_ARGUMENT, "num_blocks -1");
    EXPECT_BAD(k_token_stride, ROW - 1, PAGODA_ERR_INVALID_ARGUMENT, "k_token_stride 59");
    EXPECT_BAD(cache_dtype, PAGODA_DTYPE_I32, PAGODA_ERR_UNSUPPORTED, "cache_dtype i32");
    EXPECT_BAD(cache_dtype, (pagoda_dtype_t)99, PAGODA_ERR_UNSUPPORTED, "cache_dtype 99");
    EXPECT_BAD(layout, (pagoda_kv_layout_t)3, PAGODA_ERR_UNSUPPORTED, "layout 3");
    EXPECT_BAD(struct_size, 4, PAGODA_ERR_INVALID_ARGUMENT, "struct_size");
#undef EXPECT_BAD

    a = good;
    a.slot_mapping = NULL;
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "slot_mapping is NULL");
    a = good;
    a.v_cache = NULL;
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "v_cache is NULL");
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, NULL), PAGODA_ERR_INVALID_ARGUMENT,
                        "NULL");

    /* No tokens: nothing to read, so NULL pointers are fine. */
    a = good;
    a.n_tokens = 0;
    a.k = a.v = NULL;
    a.k_cache = a.v_cache = NULL;
    a.slot_mapping = NULL;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &a));
    setup_free(s);
    free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* Half-precision activations (act_dtype)                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Keys and values of type `act`: the setup's f32 rows converted (round to nearest even) into
 * `k_act` / `v_act`, and the setup's rows replaced by the values kept, so the f32 expectations
 * (expected_cache) describe exactly what the kernel reads. Points the descriptor at them. */
static void setup_use_act(kv_setup_t *s, pagoda_dtype_t act, uint16_t *k_act, uint16_t *v_act) {
    double kept[TOKENS * K_STRIDE];
    test_convert_weights(act, s->k, TOKENS * K_STRIDE, k_act, kept);
    for (int i = 0; i < TOKENS * K_STRIDE; ++i) s->k[i] = (float)kept[i];
    test_convert_weights(act, s->v, TOKENS * ROW, v_act, kept);
    for (int i = 0; i < TOKENS * ROW; ++i) s->v[i] = (float)kept[i];
    s->args.act_dtype = act;
    s->args.k = k_act;
    s->args.v = v_act;
}

/* bf16/f16 keys and values into every cache type: widening is exact, so the caches hold each
 * value rounded once to the cache's type, byte for byte. */
static void test_half_activations(void **state) {
    (void)state;
    static const pagoda_dtype_t acts[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const pagoda_dtype_t caches[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    uint64_t seed = 200;
    for (size_t i = 0; i < 2; ++i)
        for (size_t c = 0; c < 3; ++c) {
            kv_setup_t *s = test_xcalloc(1, sizeof *s);
            uint16_t *k_act = test_xmalloc(TOKENS * K_STRIDE * sizeof *k_act);
            uint16_t *v_act = test_xmalloc(TOKENS * ROW * sizeof *v_act);
            setup_make(s, caches[c], seed++);
            setup_use_act(s, acts[i], k_act, v_act);
            TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_KV_WRITE, &s->args));
            TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args));
            unsigned char *want_k = expected_cache(s, s->k, K_STRIDE);
            unsigned char *want_v = expected_cache(s, s->v, ROW);
            const int k_same = memcmp(want_k, s->k_cache, s->cache_bytes) == 0;
            const int v_same = memcmp(want_v, s->v_cache, s->cache_bytes) == 0;
            free(want_k);
            free(want_v);
            free(k_act);
            free(v_act);
            setup_free(s);
            free(s);
            if (!k_same || !v_same)
                fail_msg("act %s, cache %s: %s cache differs from the expected bytes",
                         pagoda_dtype_name(acts[i]), pagoda_dtype_name(caches[c]),
                         k_same ? "v" : "k");
        }
}

/* act_dtype: 0 (a caller of an ABI 1.0 header) and F32 are f32; a struct_size ending before the
 * field reads it as 0; any type but f32/bf16/f16 is unsupported. */
static void test_act_dtype_field(void **state) {
    (void)state;
    static const pagoda_dtype_t as_f32[] = {PAGODA_DTYPE_INVALID, PAGODA_DTYPE_F32};
    for (size_t i = 0; i < 3; ++i) {
        kv_setup_t *s = test_xcalloc(1, sizeof *s);
        setup_make(s, PAGODA_DTYPE_BF16, 50 + i);
        if (i < 2)
            s->args.act_dtype = as_f32[i];
        else
            s->args.struct_size = (uint32_t)offsetof(pagoda_op_kv_write_t, act_dtype);
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args));
        unsigned char *want_k = expected_cache(s, s->k, K_STRIDE);
        const int k_same = memcmp(want_k, s->k_cache, s->cache_bytes) == 0;
        free(want_k);
        setup_free(s);
        free(s);
        if (!k_same) fail_msg("act_dtype case %zu: keys not written as f32", i);
    }

    kv_setup_t *s = test_xcalloc(1, sizeof *s);
    setup_make(s, PAGODA_DTYPE_F16, 60);
    s->args.act_dtype = PAGODA_DTYPE_I32;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_UNSUPPORTED,
                             "kv_write: act_dtype = i32 (4) is not supported");
    s->args.act_dtype = (pagoda_dtype_t)77;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_UNSUPPORTED,
                             "kv_write: act_dtype = unknown (77) is not supported");
    /* The rows' extent counts the activation's bytes: a stride this large overflows them. */
    s->args.act_dtype = PAGODA_DTYPE_BF16;
    s->args.k_token_stride = INT64_MAX / 4;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_write: k of 10 rows with stride");
    setup_free(s);
    free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* Fused key rotation (k_rope)                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct fused_case {
    pagoda_rope_layout_t layout;
    pagoda_rope_scaling_t scaling;
    int64_t rot_dim; /* 0 = DIM */
    int with_freq_factors;
} fused_case_t;

/* The rope descriptor of a case: positions up to 128k, Llama 3.1's numbers for its scaling. */
static pagoda_op_rope_t fused_rope(const fused_case_t *c, const int32_t *positions,
                                   const float *freq_factors) {
    pagoda_op_rope_t r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.layout = c->layout;
    r.scaling = c->scaling;
    r.head_dim = DIM;
    r.rot_dim = c->rot_dim;
    r.positions = positions;
    r.theta = c->scaling == PAGODA_ROPE_SCALING_NONE ? 10000.0f : 500000.0f;
    r.factor = c->scaling == PAGODA_ROPE_SCALING_LINEAR ? 4.0f : 8.0f;
    r.low_freq_factor = 1.0f;
    r.high_freq_factor = 4.0f;
    r.original_max_position = 8192;
    r.freq_factors = c->with_freq_factors ? freq_factors : NULL;
    return r;
}

/* Fused (one KV_WRITE with k_rope) against unfused (ROPE on a copy of k, then KV_WRITE) on two
 * setups made from the same seed: both caches must match byte for byte, k must be unchanged,
 * and the rotation must have changed the keys (the caches differ from an unrotated write). */
static void fused_case(const fused_case_t *c, pagoda_dtype_t dtype, uint64_t seed) {
    kv_setup_t *fused = test_xcalloc(1, sizeof *fused), *unfused = test_xcalloc(1, sizeof *unfused);
    setup_make(fused, dtype, seed);
    setup_make(unfused, dtype, seed);
    test_rng_t rng;
    test_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ull);
    int32_t positions[TOKENS];
    for (int t = 0; t < TOKENS; ++t) positions[t] = (int32_t)test_rng_int(&rng, 0, 131072);
    float freq_factors[DIM / 2];
    for (int i = 0; i < DIM / 2; ++i) freq_factors[i] = test_rng_uniform(&rng, 0.5f, 8.0f);
    const pagoda_op_rope_t rope = fused_rope(c, positions, freq_factors);

    float k_before[TOKENS * K_STRIDE];
    memcpy(k_before, fused->k, sizeof k_before);
    fused->args.k_rope = &rope;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_KV_WRITE, &fused->args));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &fused->args));

    pagoda_op_rope_t separate = rope;
    separate.n_tokens = TOKENS;
    separate.n_heads = HEADS;
    separate.x = unfused->k;
    separate.token_stride = K_STRIDE;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ROPE, &separate));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &unfused->args));

    unsigned char *unrotated = expected_cache(fused, k_before, K_STRIDE);
    const int k_same = memcmp(fused->k_cache, unfused->k_cache, fused->cache_bytes) == 0;
    const int v_same = memcmp(fused->v_cache, unfused->v_cache, fused->cache_bytes) == 0;
    const int k_kept = memcmp(fused->k, k_before, sizeof k_before) == 0;
    const int rotated = memcmp(fused->k_cache, unrotated, fused->cache_bytes) != 0;
    free(unrotated);
    setup_free(fused);
    setup_free(unfused);
    free(fused);
    free(unfused);
    if (!k_same || !v_same || !k_kept || !rotated)
        fail_msg("fused kv_write layout=%d scaling=%d rot_dim=%lld freq_factors=%d cache=%s: %s",
                 (int)c->layout, (int)c->scaling, (long long)c->rot_dim, c->with_freq_factors,
                 pagoda_dtype_name(dtype),
                 !k_same    ? "k cache differs from ROPE then KV_WRITE"
                 : !v_same  ? "v cache differs from ROPE then KV_WRITE"
                 : !k_kept  ? "k was modified"
                            : "the keys were stored unrotated");
}

static void test_fused_rope_matches_rope_then_write(void **state) {
    (void)state;
    static const pagoda_dtype_t dtypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const pagoda_rope_layout_t layouts[] = {PAGODA_ROPE_HALF_SPLIT,
                                                   PAGODA_ROPE_INTERLEAVED};
    const fused_case_t shapes[] = {
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_NONE, 0, 0},
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_NONE, 8, 0},  /* rot_dim < head_dim */
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LINEAR, 12, 0},
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LLAMA3, 0, 1}, /* Llama 3.1 + rope_freqs */
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LLAMA3, 14, 1},
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_NONE, 2, 1},
    };
    uint64_t seed = 100;
    for (size_t l = 0; l < 2; ++l)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
            for (size_t d = 0; d < 3; ++d) {
                fused_case_t c = shapes[i];
                c.layout = layouts[l];
                fused_case(&c, dtypes[d], seed++);
            }
}

/* Half keys with k_rope: the rotation runs in f32 on the widened keys and rounds once, to the
 * cache's type, so the caches match ROPE on an f32 copy of the widened keys followed by an f32
 * write, byte for byte. k_rope's own act_dtype is ignored (the keys are this op's). */
static void fused_half_case(const fused_case_t *c, pagoda_dtype_t act, pagoda_dtype_t cache,
                            uint64_t seed) {
    kv_setup_t *fused = test_xcalloc(1, sizeof *fused), *unfused = test_xcalloc(1, sizeof *unfused);
    uint16_t *k_act = test_xmalloc(TOKENS * K_STRIDE * sizeof *k_act);
    uint16_t *v_act = test_xmalloc(TOKENS * ROW * sizeof *v_act);
    setup_make(fused, cache, seed);
    setup_make(unfused, cache, seed);
    setup_use_act(fused, act, k_act, v_act);
    memcpy(unfused->k, fused->k, sizeof unfused->k); /* the widened values, as f32 */
    memcpy(unfused->v, fused->v, sizeof unfused->v);
    test_rng_t rng;
    test_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ull);
    int32_t positions[TOKENS];
    for (int t = 0; t < TOKENS; ++t) positions[t] = (int32_t)test_rng_int(&rng, 0, 131072);
    float freq_factors[DIM / 2];
    for (int i = 0; i < DIM / 2; ++i) freq_factors[i] = test_rng_uniform(&rng, 0.5f, 8.0f);
    pagoda_op_rope_t rope = fused_rope(c, positions, freq_factors);
    rope.act_dtype = act == PAGODA_DTYPE_BF16 ? PAGODA_DTYPE_F16 : PAGODA_DTYPE_BF16;

    uint16_t *k_before = test_xmalloc(TOKENS * K_STRIDE * sizeof *k_before);
    memcpy(k_before, k_act, TOKENS * K_STRIDE * sizeof *k_before);
    fused->args.k_rope = &rope;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_KV_WRITE, &fused->args));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &fused->args));

    pagoda_op_rope_t separate = rope;
    separate.act_dtype = PAGODA_DTYPE_F32;
    separate.n_tokens = TOKENS;
    separate.n_heads = HEADS;
    separate.x = unfused->k;
    separate.token_stride = K_STRIDE;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ROPE, &separate));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &unfused->args));

    const int k_same = memcmp(fused->k_cache, unfused->k_cache, fused->cache_bytes) == 0;
    const int v_same = memcmp(fused->v_cache, unfused->v_cache, fused->cache_bytes) == 0;
    const int k_kept = memcmp(k_act, k_before, TOKENS * K_STRIDE * sizeof *k_before) == 0;
    free(k_before);
    free(k_act);
    free(v_act);
    setup_free(fused);
    setup_free(unfused);
    free(fused);
    free(unfused);
    if (!k_same || !v_same || !k_kept)
        fail_msg("fused kv_write act=%s cache=%s layout=%d rot_dim=%lld: %s",
                 pagoda_dtype_name(act), pagoda_dtype_name(cache), (int)c->layout,
                 (long long)c->rot_dim,
                 !k_same   ? "k cache differs from f32 ROPE then KV_WRITE"
                 : !v_same ? "v cache differs from an f32 KV_WRITE"
                           : "k was modified");
}

static void test_fused_rope_half_keys(void **state) {
    (void)state;
    static const pagoda_dtype_t acts[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const pagoda_dtype_t caches[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    const fused_case_t shapes[] = {
        {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LLAMA3, 0, 1},
        {PAGODA_ROPE_INTERLEAVED, PAGODA_ROPE_SCALING_NONE, 12, 0}, /* rot_dim < head_dim */
    };
    uint64_t seed = 300;
    for (size_t i = 0; i < 2; ++i)
        for (size_t c = 0; c < 3; ++c)
            for (size_t sh = 0; sh < 2; ++sh)
                fused_half_case(&shapes[sh], acts[i], caches[c], seed++);
}

/* k_rope's own faults: checked fields fail supports and launch alike; positions are needed
 * (and freq_factors read) only at a launch with tokens, and a bad factor writes nothing. */
static void test_fused_rope_rejects(void **state) {
    (void)state;
    kv_setup_t *s = test_xcalloc(1, sizeof *s);
    setup_make(s, PAGODA_DTYPE_BF16, 40);
    int32_t positions[TOKENS] = {0};
    float freq_factors[DIM / 2];
    for (int i = 0; i < DIM / 2; ++i) freq_factors[i] = 1.0f;
    const fused_case_t c = {PAGODA_ROPE_INTERLEAVED, PAGODA_ROPE_SCALING_NONE, 0, 1};
    pagoda_op_rope_t rope = fused_rope(&c, positions, freq_factors);
    s->args.k_rope = &rope;

    rope.head_dim = DIM + 2;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_write: k_rope.head_dim = 22 must equal head_dim = 20");
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args),
                        PAGODA_ERR_INVALID_ARGUMENT, "k_rope.head_dim = 22");
    rope.head_dim = DIM;
    rope.rot_dim = 5;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_write: k_rope.rot_dim = 5 must be even");
    rope.rot_dim = 0;
    rope.struct_size = 8;
    test_cpu_expect_rejected(PAGODA_OP_KV_WRITE, &s->args, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_write: k_rope: struct_size 8 is too small");
    rope.struct_size = sizeof rope;

    unsigned char *before = test_xmalloc(s->cache_bytes);
    memcpy(before, s->k_cache, s->cache_bytes);
    rope.positions = NULL;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_KV_WRITE, &s->args));
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args),
                        PAGODA_ERR_INVALID_ARGUMENT, "kv_write: k_rope.positions is NULL");
    rope.positions = positions;
    freq_factors[3] = -1.0f;
    test_expect_failure(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args),
                        PAGODA_ERR_INVALID_ARGUMENT,
                        "kv_write: k_rope.freq_factors[3] = -1 must be finite and positive");
    assert_memory_equal(before, s->k_cache, s->cache_bytes);
    assert_memory_equal(before, s->v_cache, s->cache_bytes);
    free(before);

    /* No tokens: nothing to rotate, so neither positions nor factors are read. */
    rope.positions = NULL;
    s->args.n_tokens = 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &s->args));
    setup_free(s);
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_slots),
        cmocka_unit_test(test_slot_out_of_range),
        cmocka_unit_test(test_bad_descriptors),
        cmocka_unit_test(test_fused_rope_matches_rope_then_write),
        cmocka_unit_test(test_fused_rope_rejects),
        cmocka_unit_test(test_half_activations),
        cmocka_unit_test(test_act_dtype_field),
        cmocka_unit_test(test_fused_rope_half_keys),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
