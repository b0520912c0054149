/* PAGODA_OP_RMSNORM and PAGODA_OP_ROPE on the CPU backend against double-precision references.
 * RMSNorm: every weight type (reference on the kept weights), with and without the fused
 * residual, out aliasing x or the residual, strided rows. RoPE: both pairings, partial rotation,
 * no/linear/Llama 3 scaling and positions up to 128k, where an f32 angle would be visibly off.
 * Both also with bf16/f16 activations: references on the widened inputs, every element within
 * one rounding of its type (the RMSNorm residual stays f32 and exact). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define TOL 1e-5
#define SENTINEL 777.0f

static const double kPi = 3.14159265358979323846;

static const pagoda_dtype_t kWeightTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16,
                                              PAGODA_DTYPE_F16};

/* ---------------------------------------------------------------------------------------- */
/* RMSNorm                                                                                   */
/* ---------------------------------------------------------------------------------------- */

enum { OUT_SEPARATE, OUT_ALIASES_X, OUT_ALIASES_RESIDUAL };

/* `amp` bounds |x| and |residual|; small values make eps matter. */
static void rmsnorm_case_amp(test_rng_t *rng, int64_t rows, int64_t dim, pagoda_dtype_t wt,
                             int with_residual, int alias, int strided, float amp) {
    const int64_t ld = strided ? dim + 3 : dim;
    const size_t n = (size_t)(rows * ld);
    const float eps = 1e-5f;
    float *x = test_xmalloc(sizeof(float) * n);
    float *x0 = test_xmalloc(sizeof(float) * n);
    float *res = with_residual ? test_xmalloc(sizeof(float) * n) : NULL;
    float *res0 = with_residual ? test_xmalloc(sizeof(float) * n) : NULL;
    float *out_buf = alias == OUT_SEPARATE ? test_xmalloc(sizeof(float) * n) : NULL;
    float *w_src = test_xmalloc(sizeof(float) * (size_t)dim);
    void *w = test_xmalloc(pagoda_dtype_size(wt) * (size_t)dim);
    double *w_kept = test_xmalloc(sizeof(double) * (size_t)dim);
    double *ref = test_xmalloc(sizeof(double) * (size_t)(rows * dim));
    double *ref_res = test_xmalloc(sizeof(double) * (size_t)(rows * dim));
    float *got = test_xmalloc(sizeof(float) * (size_t)(rows * dim));

    for (size_t i = 0; i < n; ++i) x[i] = SENTINEL;
    test_fill_uniform(rng, w_src, (size_t)dim, 0.5f, 1.5f);
    test_convert_weights(wt, w_src, (size_t)dim, w, w_kept);
    for (int64_t r = 0; r < rows; ++r) test_fill_uniform(rng, x + r * ld, (size_t)dim, -amp, amp);
    memcpy(x0, x, sizeof(float) * n);
    if (res) {
        for (size_t i = 0; i < n; ++i) res[i] = SENTINEL;
        for (int64_t r = 0; r < rows; ++r)
            test_fill_uniform(rng, res + r * ld, (size_t)dim, -amp, amp);
        memcpy(res0, res, sizeof(float) * n);
    }
    if (out_buf)
        for (size_t i = 0; i < n; ++i) out_buf[i] = SENTINEL;
    float *out = alias == OUT_ALIASES_X ? x : alias == OUT_ALIASES_RESIDUAL ? res : out_buf;

    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int64_t i = 0; i < dim; ++i) {
            /* the residual add happens in f32, as the op stores it */
            double v = res ? (double)(res0[r * ld + i] + x0[r * ld + i]) : (double)x0[r * ld + i];
            ref_res[r * dim + i] = v;
            ss += v * v;
        }
        const double inv = 1.0 / sqrt(ss / (double)dim + (double)eps);
        for (int64_t i = 0; i < dim; ++i) ref[r * dim + i] = ref_res[r * dim + i] * inv * w_kept[i];
    }

    pagoda_op_rmsnorm_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.weight_dtype = wt;
    a.rows = rows;
    a.dim = dim;
    a.eps = eps;
    a.x = x;
    a.ldx = strided ? ld : 0;
    a.residual = res;
    a.ld_residual = strided ? ld : 0;
    a.weight = w;
    a.out = out;
    a.ldo = strided ? ld : 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_RMSNORM, &a));

    for (int64_t r = 0; r < rows; ++r) {
        memcpy(got + r * dim, out + r * ld, sizeof(float) * (size_t)dim);
        for (int64_t i = dim; i < ld; ++i)
            if (out[r * ld + i] != SENTINEL)
                fail_msg("rmsnorm wrote padding at row %lld", (long long)r);
    }
    double err = test_rel_error(got, ref, (size_t)(rows * dim));
    if (!(err <= TOL))
        fail_msg("rmsnorm rows=%lld dim=%lld w=%s residual=%d alias=%d strided=%d: rel error %g",
                 (long long)rows, (long long)dim, pagoda_dtype_name(wt), with_residual, alias,
                 strided, err);
    if (res && alias != OUT_ALIASES_RESIDUAL) {
        for (int64_t r = 0; r < rows; ++r)
            memcpy(got + r * dim, res + r * ld, sizeof(float) * (size_t)dim);
        err = test_rel_error(got, ref_res, (size_t)(rows * dim));
        if (err != 0.0) fail_msg("rmsnorm residual += x differs by %g", err);
    }
    if (alias != OUT_ALIASES_X && memcmp(x, x0, sizeof(float) * n) != 0)
        fail_msg("rmsnorm changed x");

    free(x);
    free(x0);
    free(res);
    free(res0);
    free(out_buf);
    free(w_src);
    free(w);
    free(w_kept);
    free(ref);
    free(ref_res);
    free(got);
}

static void rmsnorm_case(test_rng_t *rng, int64_t rows, int64_t dim, pagoda_dtype_t wt,
                         int with_residual, int alias, int strided) {
    rmsnorm_case_amp(rng, rows, dim, wt, with_residual, alias, strided, 2.0f);
}

static void test_rmsnorm(void **state) {
    (void)state;
    static const int64_t rows[] = {1, 3, 17};
    static const int64_t dims[] = {1, 5, 33, 257, 4096};
    test_rng_t rng;
    test_rng_seed(&rng, 11);
    for (size_t t = 0; t < 3; ++t)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r)
            for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d)
                for (int strided = 0; strided < 2; ++strided) {
                    rmsnorm_case(&rng, rows[r], dims[d], kWeightTypes[t], 0, OUT_SEPARATE, strided);
                    rmsnorm_case(&rng, rows[r], dims[d], kWeightTypes[t], 0, OUT_ALIASES_X,
                                 strided);
                    rmsnorm_case(&rng, rows[r], dims[d], kWeightTypes[t], 1, OUT_SEPARATE, strided);
                    rmsnorm_case(&rng, rows[r], dims[d], kWeightTypes[t], 1, OUT_ALIASES_X,
                                 strided);
                    rmsnorm_case(&rng, rows[r], dims[d], kWeightTypes[t], 1, OUT_ALIASES_RESIDUAL,
                                 strided);
                }
    /* many rows: split across the pool */
    rmsnorm_case(&rng, 300, 1000, PAGODA_DTYPE_BF16, 1, OUT_ALIASES_X, 0);
    /* mean(x²) ≈ 3e-6 against eps = 1e-5: a kernel that drops or misplaces eps is far off */
    rmsnorm_case_amp(&rng, 3, 257, PAGODA_DTYPE_F32, 0, OUT_SEPARATE, 0, 3e-3f);
    rmsnorm_case_amp(&rng, 3, 257, PAGODA_DTYPE_F16, 1, OUT_ALIASES_X, 1, 3e-3f);
}

static void test_rmsnorm_rejects(void **state) {
    (void)state;
    pagoda_op_rmsnorm_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.weight_dtype = PAGODA_DTYPE_F16;
    a.rows = 2;
    a.dim = 8;
    a.eps = 1e-6f;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_RMSNORM, &a));
    a.weight_dtype = PAGODA_DTYPE_I32;
    test_cpu_expect_rejected(PAGODA_OP_RMSNORM, &a, PAGODA_ERR_UNSUPPORTED, "weight_dtype");
    a.weight_dtype = PAGODA_DTYPE_F32;
    a.eps = -1.0f;
    test_cpu_expect_rejected(PAGODA_OP_RMSNORM, &a, PAGODA_ERR_INVALID_ARGUMENT, "eps");
    a.eps = 1e-6f;
    a.ld_residual = 7;
    test_cpu_expect_rejected(PAGODA_OP_RMSNORM, &a, PAGODA_ERR_INVALID_ARGUMENT, "ld_residual = 7");
    a.ld_residual = 0;
    a.dim = 0;
    test_cpu_expect_rejected(PAGODA_OP_RMSNORM, &a, PAGODA_ERR_INVALID_ARGUMENT, "dim = 0");
}

/* ---------------------------------------------------------------------------------------- */
/* RoPE                                                                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct rope_case {
    pagoda_rope_layout_t layout;
    pagoda_rope_scaling_t scaling;
    int64_t n_tokens, n_heads, head_dim, rot_dim; /* rot_dim as passed: 0 = head_dim */
    int64_t pad;                                  /* extra elements per token */
    int32_t max_position;
    float theta, factor, low, high;
    int64_t original_max_position;
    const float *freq_factors; /* per-pair divisors, or NULL */
} rope_case_t;

/* Written from the op's description and Meta's llama3 apply_scaling, independently of the
 * backend. */
static double ref_scaled_inv_freq(const rope_case_t *c, int64_t rot, int64_t i) {
    double f = 1.0 / pow((double)c->theta, (double)(2 * i) / (double)rot);
    if (c->scaling == PAGODA_ROPE_SCALING_LINEAR) return f / c->factor;
    if (c->scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        const double wavelen = 2.0 * kPi / f;
        const double low_wavelen = (double)c->original_max_position / c->low;
        const double high_wavelen = (double)c->original_max_position / c->high;
        if (wavelen < high_wavelen) return f;
        if (wavelen > low_wavelen) return f / c->factor;
        const double smooth =
            ((double)c->original_max_position / wavelen - c->low) / ((double)c->high - c->low);
        return (1.0 - smooth) * f / c->factor + smooth * f;
    }
    return f;
}

/* The scaled frequency, then divided by the pair's factor when the case has factors. */
static double ref_inv_freq(const rope_case_t *c, int64_t rot, int64_t i) {
    const double f = ref_scaled_inv_freq(c, rot, i);
    return c->freq_factors ? f / (double)c->freq_factors[i] : f;
}

static void rope_case(test_rng_t *rng, rope_case_t c) {
    const int64_t rot = c.rot_dim ? c.rot_dim : c.head_dim;
    const int64_t stride = c.n_heads * c.head_dim + c.pad;
    const size_t n = (size_t)(c.n_tokens * stride);
    float *x = test_xmalloc(sizeof(float) * n);
    float *x0 = test_xmalloc(sizeof(float) * n);
    int32_t *pos = test_xmalloc(sizeof(int32_t) * (size_t)c.n_tokens);
    double *ref = test_xmalloc(sizeof(double) * n);

    test_fill_uniform(rng, x, n, -1.0f, 1.0f);
    memcpy(x0, x, sizeof(float) * n);
    for (int64_t t = 0; t < c.n_tokens; ++t) pos[t] = (int32_t)test_rng_int(rng, 0, c.max_position);
    pos[0] = c.max_position; /* the far end is always covered */
    for (size_t i = 0; i < n; ++i) ref[i] = x0[i];
    for (int64_t t = 0; t < c.n_tokens; ++t)
        for (int64_t h = 0; h < c.n_heads; ++h) {
            const int64_t base = t * stride + h * c.head_dim;
            for (int64_t i = 0; i < rot / 2; ++i) {
                const int64_t a = c.layout == PAGODA_ROPE_HALF_SPLIT ? i : 2 * i;
                const int64_t b = c.layout == PAGODA_ROPE_HALF_SPLIT ? i + rot / 2 : 2 * i + 1;
                const double angle = (double)pos[t] * ref_inv_freq(&c, rot, i);
                const double xa = x0[base + a], xb = x0[base + b];
                ref[base + a] = xa * cos(angle) - xb * sin(angle);
                ref[base + b] = xb * cos(angle) + xa * sin(angle);
            }
        }

    pagoda_op_rope_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layout = c.layout;
    a.scaling = c.scaling;
    a.n_tokens = c.n_tokens;
    a.n_heads = c.n_heads;
    a.head_dim = c.head_dim;
    a.rot_dim = c.rot_dim;
    a.x = x;
    a.token_stride = c.pad ? stride : 0;
    a.positions = pos;
    a.theta = c.theta;
    a.factor = c.factor;
    a.low_freq_factor = c.low;
    a.high_freq_factor = c.high;
    a.original_max_position = c.original_max_position;
    a.freq_factors = c.freq_factors;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ROPE, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ROPE, &a));

    const double err = test_rel_error(x, ref, n);
    if (!(err <= TOL))
        fail_msg(
            "rope layout=%d scaling=%d tokens=%lld heads=%lld head_dim=%lld rot_dim=%lld "
            "max_pos=%d: rel error %g",
            (int)c.layout, (int)c.scaling, (long long)c.n_tokens, (long long)c.n_heads,
            (long long)c.head_dim, (long long)c.rot_dim, (int)c.max_position, err);
    /* the unrotated tail of each head and the padding between tokens stay exactly as they were */
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int64_t h = 0; h < c.n_heads; ++h)
            for (int64_t i = rot; i < c.head_dim; ++i) {
                const int64_t at = t * stride + h * c.head_dim + i;
                if (x[at] != x0[at]) fail_msg("rope changed unrotated element %lld", (long long)at);
            }
        for (int64_t i = c.n_heads * c.head_dim; i < stride; ++i)
            if (x[t * stride + i] != x0[t * stride + i]) fail_msg("rope changed token padding");
    }

    free(x);
    free(x0);
    free(pos);
    free(ref);
}

static void test_rope(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 12);
    const pagoda_rope_layout_t layouts[] = {PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_INTERLEAVED};
    for (int l = 0; l < 2; ++l) {
        const pagoda_rope_layout_t lay = layouts[l];
        /* Llama 2 style: full rotation, small and long contexts */
        rope_case_t c1 = {lay, PAGODA_ROPE_SCALING_NONE, 7, 4, 64, 0, 0, 4096, 10000.0f, 0, 0, 0,
                          0, NULL};
        rope_case(&rng, c1);
        rope_case_t c2 = {lay, PAGODA_ROPE_SCALING_NONE, 5, 3, 128, 0, 5, 131072, 10000.0f, 0, 0, 0,
                          0, NULL};
        rope_case(&rng, c2);
        /* partial rotation (GPT-NeoX / Phi style), odd head count, padded tokens */
        rope_case_t c3 = {lay, PAGODA_ROPE_SCALING_NONE, 9, 5, 80, 32, 3, 2048, 10000.0f, 0, 0, 0,
                          0, NULL};
        rope_case(&rng, c3);
        rope_case_t c4 = {lay, PAGODA_ROPE_SCALING_NONE, 3, 2, 10, 2, 0, 100, 10000.0f, 0, 0, 0, 0, NULL};
        rope_case(&rng, c4);
        /* linear scaling */
        rope_case_t c5 = {
            lay, PAGODA_ROPE_SCALING_LINEAR, 6, 4, 64, 0, 0, 16384, 10000.0f, 4.0f, 0, 0, 0, NULL};
        rope_case(&rng, c5);
        /* Llama 3.1: every band of the scaling is hit with head_dim 128, theta 500000 */
        rope_case_t c6 = {
            lay, PAGODA_ROPE_SCALING_LLAMA3, 11, 8, 128, 0, 0, 131071, 500000.0f, 8.0f, 1.0f, 4.0f,
            8192, NULL};
        rope_case(&rng, c6);
        rope_case_t c7 = {
            lay, PAGODA_ROPE_SCALING_LLAMA3, 4, 3, 64, 48, 2, 100000, 500000.0f, 32.0f, 1.0f, 4.0f,
            8192, NULL};
        rope_case(&rng, c7);
        /* rot_dim past the backend's per-block frequency count, many tokens across the pool */
        rope_case_t c8 = {
            lay, PAGODA_ROPE_SCALING_NONE, 200, 2, 600, 520, 0, 60000, 1000000.0f, 0, 0, 0, 0, NULL};
        rope_case(&rng, c8);
        /* Per-pair divisors (GGUF rope_freqs.weight), alone and on top of llama3 scaling */
        float factors[64];
        for (int i = 0; i < 64; ++i) factors[i] = test_rng_uniform(&rng, 0.5f, 8.0f);
        rope_case_t c9 = {lay, PAGODA_ROPE_SCALING_NONE, 5, 4, 128, 0, 0, 131071, 500000.0f,
                          0, 0, 0, 0, factors};
        rope_case(&rng, c9);
        rope_case_t c10 = {lay, PAGODA_ROPE_SCALING_LLAMA3, 4, 2, 64, 0, 0, 65536, 500000.0f,
                           8.0f, 1.0f, 4.0f, 8192, factors};
        rope_case(&rng, c10);
    }
}

/* Position 0 is the identity, exactly. */
static void test_rope_position_zero(void **state) {
    (void)state;
    float x[2 * 8], x0[2 * 8];
    int32_t pos[2] = {0, 0};
    test_rng_t rng;
    test_rng_seed(&rng, 13);
    test_fill_uniform(&rng, x, 16, -1.0f, 1.0f);
    memcpy(x0, x, sizeof x);
    pagoda_op_rope_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n_tokens = 2;
    a.n_heads = 1;
    a.head_dim = 8;
    a.x = x;
    a.positions = pos;
    a.theta = 10000.0f;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ROPE, &a));
    assert_memory_equal(x, x0, sizeof x);
}

static void test_rope_rejects(void **state) {
    (void)state;
    pagoda_op_rope_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n_tokens = 1;
    a.n_heads = 2;
    a.head_dim = 8;
    a.theta = 10000.0f;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ROPE, &a));
    a.rot_dim = 3;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "rot_dim = 3");
    a.rot_dim = 10;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "rot_dim = 10");
    a.rot_dim = 0;
    a.layout = (pagoda_rope_layout_t)7;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_UNSUPPORTED, "layout = 7");
    a.layout = PAGODA_ROPE_INTERLEAVED;
    a.scaling = (pagoda_rope_scaling_t)9;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_UNSUPPORTED, "scaling = 9");
    a.scaling = PAGODA_ROPE_SCALING_NONE;
    a.theta = 0.0f;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "theta");
    a.theta = 500000.0f;
    a.token_stride = 15;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "token_stride = 15");
    a.token_stride = 0;
    a.scaling = PAGODA_ROPE_SCALING_LINEAR;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "factor");
    a.scaling = PAGODA_ROPE_SCALING_LLAMA3;
    a.factor = 8.0f;
    a.low_freq_factor = 4.0f;
    a.high_freq_factor = 4.0f;
    a.original_max_position = 8192;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT, "high_freq_factor");
    a.low_freq_factor = 1.0f;
    a.original_max_position = 0;
    test_cpu_expect_rejected(PAGODA_OP_ROPE, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "original_max_position");
    a.original_max_position = 8192;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ROPE, &a));
    /* A frequency divisor that is zero or not finite is refused at launch, naming the pair. */
    float x[16] = {0};
    int32_t pos[1] = {3};
    float factors[4] = {1.0f, 2.0f, 0.0f, 1.0f};
    a.x = x;
    a.positions = pos;
    a.freq_factors = factors;
    test_expect_failure(test_cpu_launch(PAGODA_OP_ROPE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "freq_factors[2]");
}

/* ---------------------------------------------------------------------------------------- */
/* bf16 / f16 activations                                                                    */
/* ---------------------------------------------------------------------------------------- */

static const pagoda_dtype_t kHalfTypes[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

static float half_load(pagoda_dtype_t dtype, const uint16_t *p, int64_t i) {
    return dtype == PAGODA_DTYPE_BF16 ? test_bf16_to_f32(p[i]) : test_f16_to_f32(p[i]);
}

static uint16_t half_round(pagoda_dtype_t dtype, float v) {
    return dtype == PAGODA_DTYPE_BF16 ? test_f32_to_bf16(v) : test_f32_to_f16(v);
}

/* Whether `got` is `ref` (exact) rounded once to `dtype` after an f32 computation: half a unit
 * in the last place (2^-8 relative for bf16, 2^-11 for f16), the f32 computation's own error
 * relative to `scale` (the largest magnitude around), and f16's subnormal spacing. */
static int half_close(pagoda_dtype_t dtype, double got, double ref, double scale) {
    const double half_ulp = dtype == PAGODA_DTYPE_BF16 ? 1.0 / 256 : 1.0 / 2048;
    return fabs(got - ref) <= half_ulp * fabs(ref) + 1e-5 * scale + 0x1p-25;
}

/* RMSNorm with x and out of `dtype`; `residual` (f32) optional, out separate or aliasing x. */
static void rmsnorm_half_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t dim,
                              pagoda_dtype_t wt, int with_residual, int out_aliases_x,
                              int strided) {
    const int64_t ld = strided ? dim + 3 : dim;
    const size_t n = (size_t)(rows * ld);
    const float eps = 1e-5f;
    const uint16_t pad = half_round(dtype, SENTINEL);
    uint16_t *x = test_xmalloc(sizeof *x * n);
    uint16_t *out_buf = out_aliases_x ? NULL : test_xmalloc(sizeof *out_buf * n);
    float *res = with_residual ? test_xmalloc(sizeof(float) * n) : NULL;
    float *res_want = with_residual ? test_xmalloc(sizeof(float) * n) : NULL;
    float *w_src = test_xmalloc(sizeof(float) * (size_t)dim);
    void *w = test_xmalloc(pagoda_dtype_size(wt) * (size_t)dim);
    double *w_kept = test_xmalloc(sizeof(double) * (size_t)dim);
    double *ref = test_xmalloc(sizeof(double) * (size_t)(rows * dim));

    test_fill_uniform(rng, w_src, (size_t)dim, 0.5f, 1.5f);
    test_convert_weights(wt, w_src, (size_t)dim, w, w_kept);
    for (size_t i = 0; i < n; ++i) {
        x[i] = pad;
        if (out_buf) out_buf[i] = pad;
        if (res) res[i] = SENTINEL;
    }
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) {
            /* rows of different scales: the normalisation must not depend on it */
            const float amp = (float)(1 << (r % 5));
            x[r * ld + i] = half_round(dtype, test_rng_uniform(rng, -amp, amp));
            if (res) res[r * ld + i] = test_rng_uniform(rng, -amp, amp);
        }
    if (res) memcpy(res_want, res, sizeof(float) * n);
    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int64_t i = 0; i < dim; ++i) {
            float v = half_load(dtype, x, r * ld + i);
            if (res) v = res_want[r * ld + i] += v; /* the residual add happens in f32 */
            ref[r * dim + i] = v;
            ss += (double)v * v;
        }
        const double inv = 1.0 / sqrt(ss / (double)dim + (double)eps);
        for (int64_t i = 0; i < dim; ++i) ref[r * dim + i] *= inv * w_kept[i];
    }
    uint16_t *out = out_aliases_x ? x : out_buf;

    pagoda_op_rmsnorm_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.act_dtype = dtype;
    a.weight_dtype = wt;
    a.rows = rows;
    a.dim = dim;
    a.eps = eps;
    a.x = x;
    a.ldx = strided ? ld : 0;
    a.residual = res;
    a.ld_residual = strided ? ld : 0;
    a.weight = w;
    a.out = out;
    a.ldo = strided ? ld : 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_RMSNORM, &a));

    for (int64_t r = 0; r < rows; ++r) {
        double scale = 0.0;
        for (int64_t i = 0; i < dim; ++i)
            if (fabs(ref[r * dim + i]) > scale) scale = fabs(ref[r * dim + i]);
        for (int64_t i = 0; i < dim; ++i) {
            const double got = half_load(dtype, out, r * ld + i), want = ref[r * dim + i];
            if (!half_close(dtype, got, want, scale))
                fail_msg("rmsnorm %s rows=%lld dim=%lld w=%s residual=%d alias=%d (%lld, %lld): "
                         "%.9g, want %.9g",
                         pagoda_dtype_name(dtype), (long long)rows, (long long)dim,
                         pagoda_dtype_name(wt), with_residual, out_aliases_x, (long long)r,
                         (long long)i, got, want);
        }
        for (int64_t i = dim; i < ld; ++i)
            if (out[r * ld + i] != pad) fail_msg("rmsnorm wrote padding at row %lld", (long long)r);
    }
    if (res && memcmp(res, res_want, sizeof(float) * n) != 0)
        fail_msg("rmsnorm %s: residual += x is not the f32 sum", pagoda_dtype_name(dtype));

    free(x);
    free(out_buf);
    free(res);
    free(res_want);
    free(w_src);
    free(w);
    free(w_kept);
    free(ref);
}

static void test_rmsnorm_half(void **state) {
    (void)state;
    static const int64_t dims[] = {1, 5, 8, 33, 257, 4096};
    test_rng_t rng;
    test_rng_seed(&rng, 14);
    for (size_t t = 0; t < 2; ++t)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d)
            for (int variant = 0; variant < 4; ++variant) {
                /* residual or not, out separate or aliasing x; weights and strides vary */
                rmsnorm_half_case(&rng, kHalfTypes[t], 3, dims[d], kWeightTypes[(d + variant) % 3],
                                  variant & 1, variant >> 1, (int)((d + variant) % 2));
            }
    rmsnorm_half_case(&rng, PAGODA_DTYPE_BF16, 300, 1000, PAGODA_DTYPE_BF16, 1, 1, 0); /* pool */
}

/* RoPE on bf16/f16 heads: rotated elements within one rounding of the rotation of the widened
 * inputs; unrotated elements and token padding left bit for bit. */
static void rope_half_case(test_rng_t *rng, pagoda_dtype_t dtype, rope_case_t c) {
    const int64_t rot = c.rot_dim ? c.rot_dim : c.head_dim;
    const int64_t stride = c.n_heads * c.head_dim + c.pad;
    const size_t n = (size_t)(c.n_tokens * stride);
    uint16_t *x = test_xmalloc(sizeof *x * n);
    uint16_t *x0 = test_xmalloc(sizeof *x0 * n);
    int32_t *pos = test_xmalloc(sizeof(int32_t) * (size_t)c.n_tokens);
    double *ref = test_xmalloc(sizeof(double) * n);
    for (size_t i = 0; i < n; ++i) x[i] = half_round(dtype, test_rng_uniform(rng, -1.0f, 1.0f));
    memcpy(x0, x, sizeof *x * n);
    for (int64_t t = 0; t < c.n_tokens; ++t) pos[t] = (int32_t)test_rng_int(rng, 0, c.max_position);
    pos[0] = c.max_position;
    for (size_t i = 0; i < n; ++i) ref[i] = half_load(dtype, x0, (int64_t)i);
    for (int64_t t = 0; t < c.n_tokens; ++t)
        for (int64_t h = 0; h < c.n_heads; ++h) {
            const int64_t base = t * stride + h * c.head_dim;
            for (int64_t i = 0; i < rot / 2; ++i) {
                const int64_t ia = c.layout == PAGODA_ROPE_HALF_SPLIT ? i : 2 * i;
                const int64_t ib = c.layout == PAGODA_ROPE_HALF_SPLIT ? i + rot / 2 : 2 * i + 1;
                const double angle = (double)pos[t] * ref_inv_freq(&c, rot, i);
                const double xa = half_load(dtype, x0, base + ia);
                const double xb = half_load(dtype, x0, base + ib);
                ref[base + ia] = xa * cos(angle) - xb * sin(angle);
                ref[base + ib] = xb * cos(angle) + xa * sin(angle);
            }
        }

    pagoda_op_rope_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.act_dtype = dtype;
    a.layout = c.layout;
    a.scaling = c.scaling;
    a.n_tokens = c.n_tokens;
    a.n_heads = c.n_heads;
    a.head_dim = c.head_dim;
    a.rot_dim = c.rot_dim;
    a.x = x;
    a.token_stride = c.pad ? stride : 0;
    a.positions = pos;
    a.theta = c.theta;
    a.factor = c.factor;
    a.low_freq_factor = c.low;
    a.high_freq_factor = c.high;
    a.original_max_position = c.original_max_position;
    a.freq_factors = c.freq_factors;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ROPE, &a));

    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int64_t e = 0; e < stride; ++e) {
            const int64_t at = t * stride + e;
            const int64_t in_head = e % c.head_dim;
            const int rotated = e < c.n_heads * c.head_dim && in_head < rot;
            if (!rotated) {
                if (x[at] != x0[at])
                    fail_msg("rope %s changed unrotated element %lld", pagoda_dtype_name(dtype),
                             (long long)at);
            } else if (!half_close(dtype, half_load(dtype, x, at), ref[at], 1.0)) {
                fail_msg("rope %s layout=%d scaling=%d head_dim=%lld rot_dim=%lld element %lld: "
                         "%.9g, want %.9g",
                         pagoda_dtype_name(dtype), (int)c.layout, (int)c.scaling,
                         (long long)c.head_dim, (long long)rot, (long long)at,
                         (double)half_load(dtype, x, at), ref[at]);
            }
        }
    }
    free(x);
    free(x0);
    free(pos);
    free(ref);
}

static void test_rope_half(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 15);
    float factors[300];
    for (int i = 0; i < 300; ++i) factors[i] = test_rng_uniform(&rng, 0.5f, 8.0f);
    for (size_t t = 0; t < 2; ++t)
        for (int l = 0; l < 2; ++l) {
            const pagoda_rope_layout_t lay = (pagoda_rope_layout_t)l;
            const rope_case_t cases[] = {
                {lay, PAGODA_ROPE_SCALING_NONE, 7, 4, 64, 0, 0, 4096, 10000.0f, 0, 0, 0, 0, NULL},
                /* partial rotation, padded tokens */
                {lay, PAGODA_ROPE_SCALING_NONE, 9, 5, 80, 32, 3, 2048, 10000.0f, 0, 0, 0, 0, NULL},
                {lay, PAGODA_ROPE_SCALING_LLAMA3, 11, 8, 128, 0, 0, 131071, 500000.0f, 8.0f, 1.0f,
                 4.0f, 8192, factors},
                /* more pairs than the backend's per-block count */
                {lay, PAGODA_ROPE_SCALING_LINEAR, 40, 2, 600, 520, 1, 60000, 1000000.0f, 4.0f, 0,
                 0, 0, NULL},
            };
            for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
                rope_half_case(&rng, kHalfTypes[t], cases[k]);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),      cmocka_unit_test(test_rmsnorm_rejects),
        cmocka_unit_test(test_rope),         cmocka_unit_test(test_rope_position_zero),
        cmocka_unit_test(test_rope_rejects),
        cmocka_unit_test(test_rmsnorm_half),    cmocka_unit_test(test_rope_half),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
