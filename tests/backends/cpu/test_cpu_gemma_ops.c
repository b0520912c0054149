/* The dense ops ABI 1.8 added for Gemma-family models, on the CPU backend against
 * double-precision references: SILU_MUL with the GELU (tanh) gate, the SOFTCAP op, and
 * EMBEDDING's scale; f32 and bf16/f16 activations (references on the widened inputs, each
 * result rounded once), unaligned starts and the values where the formulas break down (tails of
 * the gate, ±inf and NaN logits, values far inside the cap). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SENTINEL -555.0f

static const pagoda_dtype_t kTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

/* PyTorch's gelu(approximate="tanh"), as ops.h defines it. */
static double ref_gelu(double z) {
    return 0.5 * z * (1.0 + tanh(sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
}

static size_t type_size(pagoda_dtype_t t) { return t == PAGODA_DTYPE_F32 ? 4 : 2; }

static float load(pagoda_dtype_t t, const void *p, int64_t i) {
    if (t == PAGODA_DTYPE_BF16) return test_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == PAGODA_DTYPE_F16) return test_f16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void store(pagoda_dtype_t t, void *p, int64_t i, float v) {
    if (t == PAGODA_DTYPE_BF16)
        ((uint16_t *)p)[i] = test_f32_to_bf16(v);
    else if (t == PAGODA_DTYPE_F16)
        ((uint16_t *)p)[i] = test_f32_to_f16(v);
    else
        ((float *)p)[i] = v;
}

/* `v` rounded to `t` (round to nearest even), as f32. */
static float round_to(pagoda_dtype_t t, float v) {
    if (t == PAGODA_DTYPE_BF16) return test_bf16_to_f32(test_f32_to_bf16(v));
    if (t == PAGODA_DTYPE_F16) return test_f16_to_f32(test_f32_to_f16(v));
    return v;
}

/* Half a unit in the last place of `t` (0 for f32): what rounding the f32 result adds. */
static double half_ulp(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_BF16 ? 1.0 / 256 : t == PAGODA_DTYPE_F16 ? 1.0 / 2048 : 0.0;
}

/* ---------------------------------------------------------------------------------------- */
/* SILU_MUL with GELU (tanh)                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* A fused [rows, 2·dim] gate_up buffer of `t`; out aliasing gate or a separate padded buffer.
 * Every element within the f32 computation's error (relative to |gate · up|, which bounds the
 * result) plus one rounding to `t`. */
static void gelu_case(test_rng_t *rng, pagoda_dtype_t t, int64_t rows, int64_t dim, int alias) {
    const int64_t ld_in = 2 * dim, ldo = alias ? ld_in : dim + 3;
    const size_t n_in = (size_t)(rows * ld_in), n_out = (size_t)(rows * ldo);
    void *gate_up = test_xmalloc(n_in * type_size(t));
    for (size_t i = 0; i < n_in; ++i) store(t, gate_up, (int64_t)i, test_rng_uniform(rng, -12, 12));
    /* The gate's tails: e^(2u) overflows f32 at -100, and z³ overflows at ±1e13. */
    store(t, gate_up, 0, -100.0f);
    if (dim > 1) store(t, gate_up, 1, t == PAGODA_DTYPE_F16 ? 300.0f : 1e13f);
    if (dim > 2) store(t, gate_up, 2, t == PAGODA_DTYPE_F16 ? -300.0f : -1e13f);
    if (dim > 3) store(t, gate_up, 3, 0.0f);
    const size_t n_ref = (size_t)(rows * dim);
    double *ref = test_xmalloc(sizeof(double) * n_ref);
    double *ref_gate = test_xmalloc(sizeof(double) * n_ref);
    double *ref_up = test_xmalloc(sizeof(double) * n_ref);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) {
            ref_gate[r * dim + i] = load(t, gate_up, r * ld_in + i);
            ref_up[r * dim + i] = load(t, gate_up, r * ld_in + dim + i);
            ref[r * dim + i] = ref_gelu(ref_gate[r * dim + i]) * ref_up[r * dim + i];
        }
    void *out = gate_up;
    if (!alias) {
        out = test_xmalloc(n_out * type_size(t));
        for (size_t i = 0; i < n_out; ++i) store(t, out, (int64_t)i, SENTINEL);
    }

    pagoda_op_silu_mul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.act_dtype = t;
    a.activation = PAGODA_GLU_GELU_TANH;
    a.rows = rows;
    a.dim = dim;
    a.gate = gate_up;
    a.up = (char *)gate_up + (size_t)dim * type_size(t);
    a.ld_in = ld_in;
    a.out = out;
    a.ldo = ldo;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SILU_MUL, &a));

    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < dim; ++i) {
            const double got = load(t, out, r * ldo + i), want = ref[r * dim + i];
            const double mag = fabs(ref_gate[r * dim + i] * ref_up[r * dim + i]);
            if (!(fabs(got - want) <= half_ulp(t) * fabs(want) + 1e-6 * (mag > 1 ? mag : 1)))
                fail_msg("gelu_mul %s rows=%lld dim=%lld alias=%d (%lld, %lld): %.9g, want %.9g",
                         pagoda_dtype_name(t), (long long)rows, (long long)dim, alias,
                         (long long)r, (long long)i, got, want);
        }
        if (!alias && load(t, out, r * ldo + dim) != round_to(t, SENTINEL))
            fail_msg("gelu_mul wrote padding");
    }
    if (!alias) free(out);
    free(gate_up);
    free(ref);
    free(ref_gate);
    free(ref_up);
}

static void test_gelu_mul(void **state) {
    (void)state;
    static const int64_t dims[] = {1, 4, 7, 8, 9, 256, 1001};
    test_rng_t rng;
    test_rng_seed(&rng, 81);
    for (size_t t = 0; t < 3; ++t) {
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d) {
            gelu_case(&rng, kTypes[t], 3, dims[d], 0);
            gelu_case(&rng, kTypes[t], 3, dims[d], 1);
        }
        gelu_case(&rng, kTypes[t], 64, 3000, 1); /* big enough for the pool */
    }
}

/* activation 0 is SiLU, as an older caller's struct reads; an unknown one is refused. */
static void test_gelu_mul_activation_field(void **state) {
    (void)state;
    float gate_up[2] = {-1.5f, 2.0f}, out = 0.0f;
    pagoda_op_silu_mul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = 1;
    a.dim = 1;
    a.gate = gate_up;
    a.up = gate_up + 1;
    a.out = &out;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SILU_MUL, &a));
    assert_true(fabs(out - (-1.5 / (1.0 + exp(1.5))) * 2.0) < 1e-6);
    a.activation = PAGODA_GLU_GELU_TANH;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SILU_MUL, &a));
    assert_true(fabs(out - ref_gelu(-1.5) * 2.0) < 1e-6);
    a.activation = 7;
    test_cpu_expect_rejected(PAGODA_OP_SILU_MUL, &a, PAGODA_ERR_UNSUPPORTED,
                             "silu_mul: activation = 7 is not an activation this backend knows");
}

/* ---------------------------------------------------------------------------------------- */
/* SOFTCAP                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* n values of `t` capped in place, starting `offset` elements into the buffer (so the vector
 * loop meets unaligned starts and every tail length); the elements around them untouched. */
static void softcap_case(test_rng_t *rng, pagoda_dtype_t t, int64_t n, float cap, int64_t offset) {
    const int64_t total = offset + n + 1;
    void *buf = test_xmalloc((size_t)total * type_size(t));
    for (int64_t i = 0; i < total; ++i) store(t, buf, i, test_rng_uniform(rng, -5 * cap, 5 * cap));
    /* Values far inside the cap (tanh x ≈ x must keep its relative precision), the origin,
     * far outside it, infinities and NaN. */
    static const float special[] = {0.0f, 1e-30f, -3e-6f, 1e-3f, 1e30f, -1e30f,
                                    INFINITY, -INFINITY, NAN};
    for (int64_t i = 0; i < n && i < 9; ++i) store(t, buf, offset + i, special[i]);
    for (int64_t i = 9; i < n; i += 5) store(t, buf, offset + i, load(t, buf, offset + i) * 1e-4f);
    const float before = offset > 0 ? load(t, buf, offset - 1) : 0.0f;
    const float after = load(t, buf, total - 1);
    double *xs = test_xmalloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; ++i) xs[i] = load(t, buf, offset + i);

    pagoda_op_softcap_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n = n;
    a.cap = cap;
    a.x = (char *)buf + (size_t)offset * type_size(t);
    a.dtype = t == PAGODA_DTYPE_F32 && offset % 2 ? PAGODA_DTYPE_INVALID : t; /* 0 means f32 */
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SOFTCAP, &a));

    for (int64_t i = 0; i < n; ++i) {
        const double x = xs[i], want = cap * tanh(x / cap), got = load(t, buf, offset + i);
        /* Near the origin tanh keeps relative precision; elsewhere its error is against cap. */
        const double f32_error = 5e-7 * (fabs(x) < 0.2 * cap ? fabs(want) : cap);
        const int ok = isnan(want) ? isnan(got)
                                   : fabs(got - want) <= half_ulp(t) * fabs(want) + f32_error;
        if (!ok)
            fail_msg("softcap %s n=%lld cap=%g offset=%lld element %lld (x = %.9g): %.9g, "
                     "want %.9g",
                     pagoda_dtype_name(t), (long long)n, (double)cap, (long long)offset,
                     (long long)i, x, got, want);
    }
    if (offset > 0 && load(t, buf, offset - 1) != before) fail_msg("softcap wrote before x");
    if (load(t, buf, total - 1) != after) fail_msg("softcap wrote past x");
    free(buf);
    free(xs);
}

static void test_softcap(void **state) {
    (void)state;
    static const int64_t sizes[] = {1, 7, 8, 9, 15, 17, 1000, 70001};
    static const float caps[] = {30.0f, 1.0f, 0.125f};
    test_rng_t rng;
    test_rng_seed(&rng, 82);
    for (size_t t = 0; t < 3; ++t)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
            for (size_t c = 0; c < 3; ++c)
                softcap_case(&rng, kTypes[t], sizes[s], caps[c], (int64_t)(s + c) % 3);
    softcap_case(&rng, PAGODA_DTYPE_BF16, 4 * 256000, 30.0f, 0); /* a batch of Gemma 2 logits */
}

static void test_softcap_refused(void **state) {
    (void)state;
    float x[4] = {0};
    pagoda_op_softcap_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n = 4;
    a.cap = 0.0f;
    a.x = x;
    test_cpu_expect_rejected(PAGODA_OP_SOFTCAP, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "softcap: cap = 0 must be positive and finite");
    a.cap = 30.0f;
    a.x = NULL;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SOFTCAP, &a)); /* pointers are not looked at */
    test_expect_failure(test_cpu_launch(PAGODA_OP_SOFTCAP, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "softcap: x is NULL");
    assert_string_equal(pagoda_op_name(PAGODA_OP_SOFTCAP), "softcap");
}

/* ---------------------------------------------------------------------------------------- */
/* EMBEDDING's scale                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Each element must be the kept table value times `scale` as one f32 product, rounded once to
 * the output type: exactly (0 means 1). */
static void embedding_scale_case(test_rng_t *rng, pagoda_dtype_t table_t, pagoda_dtype_t out_t,
                                 int64_t vocab, int64_t dim, int64_t n_tokens, int64_t ldo,
                                 float scale) {
    const size_t n = (size_t)(vocab * dim);
    float *src = test_xmalloc(sizeof(float) * n);
    void *table = test_xmalloc(n * type_size(table_t));
    double *kept = test_xmalloc(sizeof(double) * n);
    test_fill_uniform(rng, src, n, -2.0f, 2.0f);
    test_convert_weights(table_t, src, n, table, kept);
    int32_t *ids = test_xmalloc(sizeof(int32_t) * (size_t)n_tokens);
    for (int64_t i = 0; i < n_tokens; ++i) ids[i] = (int32_t)test_rng_int(rng, 0, vocab - 1);
    const int64_t ld = ldo ? ldo : dim;
    void *out = test_xmalloc((size_t)(n_tokens * ld) * type_size(out_t));
    for (int64_t i = 0; i < n_tokens * ld; ++i) store(out_t, out, i, SENTINEL);

    pagoda_op_embedding_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.table_dtype = table_t;
    a.out_dtype = out_t;
    a.vocab_size = vocab;
    a.dim = dim;
    a.n_tokens = n_tokens;
    a.table = table;
    a.ids = ids;
    a.out = out;
    a.ldo = ldo;
    a.scale = scale;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_EMBEDDING, &a));

    const float factor = scale == 0.0f ? 1.0f : scale;
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t i = 0; i < dim; ++i) {
            const float product = (float)kept[(int64_t)ids[t] * dim + i] * factor;
            const float w = round_to(out_t, product), got = load(out_t, out, t * ld + i);
            if (got != w)
                fail_msg("embedding %s -> %s scale %g token %lld element %lld: %.9g, want %.9g",
                         pagoda_dtype_name(table_t), pagoda_dtype_name(out_t), (double)scale,
                         (long long)t, (long long)i, (double)got, (double)w);
        }
        for (int64_t i = dim; i < ld; ++i)
            if (load(out_t, out, t * ld + i) != round_to(out_t, SENTINEL))
                fail_msg("embedding wrote padding");
    }
    free(src);
    free(table);
    free(kept);
    free(ids);
    free(out);
}

static void test_embedding_scale(void **state) {
    (void)state;
    static const float scales[] = {48.0f, 0.0f, 1.0f, -0.3f, 33.9411255f};
    test_rng_t rng;
    test_rng_seed(&rng, 83);
    for (size_t tt = 0; tt < 3; ++tt)
        for (size_t ot = 0; ot < 3; ++ot)
            for (size_t s = 0; s < 5; ++s) {
                embedding_scale_case(&rng, kTypes[tt], kTypes[ot], 100, 33, 5, 40, scales[s]);
                embedding_scale_case(&rng, kTypes[tt], kTypes[ot], 500, 256, 70, 0, scales[s]);
            }
    pagoda_op_embedding_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.table_dtype = PAGODA_DTYPE_F32;
    a.vocab_size = a.dim = a.n_tokens = 1;
    a.scale = NAN;
    test_cpu_expect_rejected(PAGODA_OP_EMBEDDING, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "embedding: scale = nan is not finite");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu_mul),
        cmocka_unit_test(test_gelu_mul_activation_field),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_softcap_refused),
        cmocka_unit_test(test_embedding_scale),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
