/* PAGODA_OP_SILU_MUL, PAGODA_OP_ADD and PAGODA_OP_EMBEDDING on the CPU backend against
 * double-precision references: the fused gate_up layout, outputs aliasing inputs, strided rows
 * with untouched padding, every embedding table type, out-of-range token ids, and bf16/f16
 * activations (references on the widened inputs, each result rounded once). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define TOL 1e-5
#define SENTINEL -555.0f

static double ref_silu(double z) { return z / (1.0 + exp(-z)); }

/* gate_up is one [rows, 2·dim] buffer, as a fused projection writes it; out is either that
 * buffer (aliasing gate, ldo = 2·dim) or a separate one with padded rows. */
static void silu_mul_case(test_rng_t *rng, int64_t rows, int64_t dim, int out_aliases_gate) {
    const int64_t ld_in = 2 * dim;
    const int64_t ldo = out_aliases_gate ? ld_in : dim + 1;
    float *gate_up = test_xmalloc(sizeof(float) * (size_t)(rows * ld_in));
    float *out_buf = out_aliases_gate ? NULL : test_xmalloc(sizeof(float) * (size_t)(rows * ldo));
    double *ref = test_xmalloc(sizeof(double) * (size_t)(rows * dim));
    float *got = test_xmalloc(sizeof(float) * (size_t)(rows * dim));

    test_fill_uniform(rng, gate_up, (size_t)(rows * ld_in), -12.0f, 12.0f);
    gate_up[0] = -100.0f; /* e^100 overflows f32: silu must still give -0 */
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i)
            ref[r * dim + i] = ref_silu(gate_up[r * ld_in + i]) * gate_up[r * ld_in + dim + i];
    if (out_buf)
        for (int64_t i = 0; i < rows * ldo; ++i) out_buf[i] = SENTINEL;
    float *out = out_aliases_gate ? gate_up : out_buf;

    pagoda_op_silu_mul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = rows;
    a.dim = dim;
    a.gate = gate_up;
    a.up = gate_up + dim;
    a.ld_in = ld_in;
    a.out = out;
    a.ldo = ldo;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SILU_MUL, &a));

    for (int64_t r = 0; r < rows; ++r) {
        memcpy(got + r * dim, out + r * ldo, sizeof(float) * (size_t)dim);
        if (out_buf && out_buf[r * ldo + dim] != SENTINEL) fail_msg("silu_mul wrote padding");
    }
    const double err = test_rel_error(got, ref, (size_t)(rows * dim));
    if (!(err <= TOL))
        fail_msg("silu_mul rows=%lld dim=%lld alias=%d: rel error %g", (long long)rows,
                 (long long)dim, out_aliases_gate, err);
    if (!(isfinite(got[0]))) fail_msg("silu(-100) gave %g", (double)got[0]);

    free(gate_up);
    free(out_buf);
    free(ref);
    free(got);
}

static void test_silu_mul(void **state) {
    (void)state;
    static const int64_t rows[] = {1, 3, 17};
    static const int64_t dims[] = {1, 7, 256, 1001};
    test_rng_t rng;
    test_rng_seed(&rng, 21);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d) {
            silu_mul_case(&rng, rows[r], dims[d], 0);
            silu_mul_case(&rng, rows[r], dims[d], 1);
        }
    silu_mul_case(&rng, 64, 3000, 1); /* big enough for the pool */
}

static void test_add(void **state) {
    (void)state;
    static const int64_t sizes[] = {1, 7, 1000, 300007};
    test_rng_t rng;
    test_rng_seed(&rng, 22);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
        for (int alias = 0; alias < 3; ++alias) { /* separate, out = a, out = b */
            const int64_t n = sizes[s];
            float *a = test_xmalloc(sizeof(float) * (size_t)n);
            float *b = test_xmalloc(sizeof(float) * (size_t)n);
            float *o = test_xmalloc(sizeof(float) * (size_t)n);
            double *ref = test_xmalloc(sizeof(double) * (size_t)n);
            test_fill_uniform(&rng, a, (size_t)n, -3.0f, 3.0f);
            test_fill_uniform(&rng, b, (size_t)n, -3.0f, 3.0f);
            for (int64_t i = 0; i < n; ++i) ref[i] = (double)a[i] + (double)b[i];
            pagoda_op_add_t args;
            memset(&args, 0, sizeof args);
            args.struct_size = sizeof args;
            args.n = n;
            args.a = a;
            args.b = b;
            args.out = alias == 0 ? o : alias == 1 ? a : b;
            TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ADD, &args));
            const double err = test_rel_error(args.out, ref, (size_t)n);
            if (!(err <= 1e-7))
                fail_msg("add n=%lld alias=%d: rel error %g", (long long)n, alias, err);
            free(a);
            free(b);
            free(o);
            free(ref);
        }
}

/* ---------------------------------------------------------------------------------------- */
/* Embedding                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static void embedding_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t vocab, int64_t dim,
                           int64_t n_tokens, int64_t ldo) {
    float *src = test_xmalloc(sizeof(float) * (size_t)(vocab * dim));
    void *table = test_xmalloc(pagoda_dtype_size(dtype) * (size_t)(vocab * dim));
    double *kept = test_xmalloc(sizeof(double) * (size_t)(vocab * dim));
    int32_t *ids = test_xmalloc(sizeof(int32_t) * (size_t)n_tokens);
    const int64_t ld = ldo ? ldo : dim;
    float *out = test_xmalloc(sizeof(float) * (size_t)(n_tokens * ld));

    test_fill_uniform(rng, src, (size_t)(vocab * dim), -1.0f, 1.0f);
    test_convert_weights(dtype, src, (size_t)(vocab * dim), table, kept);
    for (int64_t t = 0; t < n_tokens; ++t) ids[t] = (int32_t)test_rng_int(rng, 0, vocab - 1);
    ids[0] = (int32_t)(vocab - 1); /* both ends of the table */
    if (n_tokens > 1) ids[1] = 0;
    for (int64_t i = 0; i < n_tokens * ld; ++i) out[i] = SENTINEL;

    pagoda_op_embedding_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.table_dtype = dtype;
    a.vocab_size = vocab;
    a.dim = dim;
    a.n_tokens = n_tokens;
    a.table = table;
    a.ids = ids;
    a.out = out;
    a.ldo = ldo;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_EMBEDDING, &a));
    /* widening is exact: every value must equal the kept weight */
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t i = 0; i < dim; ++i)
            if ((double)out[t * ld + i] != kept[(int64_t)ids[t] * dim + i])
                fail_msg("embedding %s token %lld (id %d) element %lld: %g != %g",
                         pagoda_dtype_name(dtype), (long long)t, ids[t], (long long)i,
                         (double)out[t * ld + i], kept[(int64_t)ids[t] * dim + i]);
        for (int64_t i = dim; i < ld; ++i)
            if (out[t * ld + i] != SENTINEL) fail_msg("embedding wrote padding");
    }

    free(src);
    free(table);
    free(kept);
    free(ids);
    free(out);
}

static void test_embedding(void **state) {
    (void)state;
    static const pagoda_dtype_t types[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    test_rng_t rng;
    test_rng_seed(&rng, 23);
    for (size_t t = 0; t < 3; ++t) {
        embedding_case(&rng, types[t], 1, 1, 1, 0);
        embedding_case(&rng, types[t], 100, 33, 5, 0);
        embedding_case(&rng, types[t], 100, 33, 5, 40);
        embedding_case(&rng, types[t], 1000, 515, 300, 0);
    }
}

static void test_embedding_bad_ids(void **state) {
    (void)state;
    float table[4 * 3] = {0};
    int32_t ids[3] = {1, 3, 4};
    float out[3 * 3];
    for (int i = 0; i < 9; ++i) out[i] = SENTINEL;
    pagoda_op_embedding_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.table_dtype = PAGODA_DTYPE_F32;
    a.vocab_size = 4;
    a.dim = 3;
    a.n_tokens = 3;
    a.table = table;
    a.ids = ids;
    a.out = out;

    pagoda_clear_error();
    test_expect_failure(test_cpu_launch(PAGODA_OP_EMBEDDING, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "ids[2] = 4");
    for (int i = 0; i < 9; ++i) assert_true(out[i] == SENTINEL); /* nothing written */

    ids[2] = 2;
    ids[0] = -7;
    pagoda_clear_error();
    test_expect_failure(test_cpu_launch(PAGODA_OP_EMBEDDING, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "ids[0] = -7");

    ids[0] = 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_EMBEDDING, &a));
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

/* n random values in [lo, hi) already of `dtype`. */
static uint16_t *half_random(test_rng_t *rng, pagoda_dtype_t dtype, size_t n, float lo, float hi) {
    uint16_t *h = test_xmalloc(n * sizeof *h);
    for (size_t i = 0; i < n; ++i) h[i] = half_round(dtype, test_rng_uniform(rng, lo, hi));
    return h;
}

/* Whether `got` is `ref` (exact) rounded once to `dtype` after an f32 computation: half a unit
 * in the last place (2^-8 relative for bf16, 2^-11 for f16), the f32 computation's own error
 * relative to `scale` (the largest magnitude around), and f16's subnormal spacing. */
static int half_close(pagoda_dtype_t dtype, double got, double ref, double scale) {
    const double half_ulp = dtype == PAGODA_DTYPE_BF16 ? 1.0 / 256 : 1.0 / 2048;
    return fabs(got - ref) <= half_ulp * fabs(ref) + 1e-6 * scale + 0x1p-25;
}

/* silu_mul of `dtype` over a fused [rows, 2·dim] gate_up buffer, out either aliasing gate or a
 * separate buffer with padded rows whose padding must survive. */
static void silu_mul_half_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t dim,
                               int out_aliases_gate) {
    const int64_t ld_in = 2 * dim, ldo = out_aliases_gate ? ld_in : dim + 3;
    const uint16_t pad = half_round(dtype, SENTINEL);
    uint16_t *gate_up = half_random(rng, dtype, (size_t)(rows * ld_in), -12.0f, 12.0f);
    uint16_t *out_buf = NULL;
    if (!out_aliases_gate) {
        out_buf = test_xmalloc(sizeof *out_buf * (size_t)(rows * ldo));
        for (int64_t i = 0; i < rows * ldo; ++i) out_buf[i] = pad;
    }
    double *ref = test_xmalloc(sizeof(double) * (size_t)(rows * dim));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i)
            ref[r * dim + i] = ref_silu(half_load(dtype, gate_up, r * ld_in + i)) *
                               half_load(dtype, gate_up, r * ld_in + dim + i);
    uint16_t *out = out_aliases_gate ? gate_up : out_buf;

    pagoda_op_silu_mul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.act_dtype = dtype;
    a.rows = rows;
    a.dim = dim;
    a.gate = gate_up;
    a.up = gate_up + dim;
    a.ld_in = ld_in;
    a.out = out;
    a.ldo = ldo;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SILU_MUL, &a));

    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < dim; ++i) {
            const double got = half_load(dtype, out, r * ldo + i), want = ref[r * dim + i];
            if (!half_close(dtype, got, want, 24.0))
                fail_msg("silu_mul %s rows=%lld dim=%lld alias=%d (%lld, %lld): %.9g, want %.9g",
                         pagoda_dtype_name(dtype), (long long)rows, (long long)dim,
                         out_aliases_gate, (long long)r, (long long)i, got, want);
        }
        if (out_buf && out_buf[r * ldo + dim] != pad) fail_msg("silu_mul wrote padding");
    }
    free(gate_up);
    free(out_buf);
    free(ref);
}

static void test_silu_mul_half(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 24);
    for (size_t t = 0; t < 2; ++t) {
        static const int64_t dims[] = {1, 7, 8, 9, 256, 1001};
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d) {
            silu_mul_half_case(&rng, kHalfTypes[t], 3, dims[d], 0);
            silu_mul_half_case(&rng, kHalfTypes[t], 3, dims[d], 1);
        }
        silu_mul_half_case(&rng, kHalfTypes[t], 64, 3000, 1); /* big enough for the pool */
    }
}

/* a + b in f32, rounded once: the result's bits are known exactly. */
static void test_add_half(void **state) {
    (void)state;
    static const int64_t sizes[] = {1, 7, 1000, 300007};
    test_rng_t rng;
    test_rng_seed(&rng, 25);
    for (size_t t = 0; t < 2; ++t)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
            for (int alias = 0; alias < 3; ++alias) { /* separate, out = a, out = b */
                const pagoda_dtype_t dtype = kHalfTypes[t];
                const int64_t n = sizes[s];
                uint16_t *a = half_random(&rng, dtype, (size_t)n, -3.0f, 3.0f);
                uint16_t *b = half_random(&rng, dtype, (size_t)n, -3.0f, 3.0f);
                uint16_t *o = test_xcalloc((size_t)n, sizeof *o);
                uint16_t *want = test_xmalloc(sizeof *want * (size_t)n);
                for (int64_t i = 0; i < n; ++i) {
                    const float sum = half_load(dtype, a, i) + half_load(dtype, b, i);
                    want[i] = half_round(dtype, sum);
                }
                pagoda_op_add_t args;
                memset(&args, 0, sizeof args);
                args.struct_size = sizeof args;
                args.act_dtype = dtype;
                args.n = n;
                args.a = a;
                args.b = b;
                args.out = alias == 0 ? o : alias == 1 ? a : b;
                TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ADD, &args));
                const uint16_t *got = args.out;
                for (int64_t i = 0; i < n; ++i)
                    if (got[i] != want[i])
                        fail_msg("add %s n=%lld alias=%d element %lld: 0x%04x, want 0x%04x",
                                 pagoda_dtype_name(dtype), (long long)n, alias, (long long)i,
                                 got[i], want[i]);
                free(a);
                free(b);
                free(o);
                free(want);
            }
}

/* Every table type into a bf16/f16 output: each element is the kept table value rounded once
 * (a table of the output's own type is copied as it is). */
static void embedding_half_case(test_rng_t *rng, pagoda_dtype_t table_dtype,
                                pagoda_dtype_t out_dtype, int64_t vocab, int64_t dim,
                                int64_t n_tokens, int64_t ldo) {
    float *src = test_xmalloc(sizeof(float) * (size_t)(vocab * dim));
    void *table = test_xmalloc(pagoda_dtype_size(table_dtype) * (size_t)(vocab * dim));
    double *kept = test_xmalloc(sizeof(double) * (size_t)(vocab * dim));
    int32_t *ids = test_xmalloc(sizeof(int32_t) * (size_t)n_tokens);
    const int64_t ld = ldo ? ldo : dim;
    const uint16_t pad = half_round(out_dtype, SENTINEL);
    uint16_t *out = test_xmalloc(sizeof *out * (size_t)(n_tokens * ld));

    test_fill_uniform(rng, src, (size_t)(vocab * dim), -1.0f, 1.0f);
    src[0] = 1e-6f; /* below f16's smallest normal: rounds to a subnormal */
    test_convert_weights(table_dtype, src, (size_t)(vocab * dim), table, kept);
    for (int64_t t = 0; t < n_tokens; ++t) ids[t] = (int32_t)test_rng_int(rng, 0, vocab - 1);
    ids[0] = 0;
    for (int64_t i = 0; i < n_tokens * ld; ++i) out[i] = pad;

    pagoda_op_embedding_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.table_dtype = table_dtype;
    a.out_dtype = out_dtype;
    a.vocab_size = vocab;
    a.dim = dim;
    a.n_tokens = n_tokens;
    a.table = table;
    a.ids = ids;
    a.out = out;
    a.ldo = ldo;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_EMBEDDING, &a));
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t i = 0; i < dim; ++i) {
            const uint16_t want = half_round(out_dtype, (float)kept[(int64_t)ids[t] * dim + i]);
            if (out[t * ld + i] != want)
                fail_msg("embedding %s -> %s token %lld element %lld: 0x%04x, want 0x%04x",
                         pagoda_dtype_name(table_dtype), pagoda_dtype_name(out_dtype),
                         (long long)t, (long long)i, out[t * ld + i], want);
        }
        for (int64_t i = dim; i < ld; ++i)
            if (out[t * ld + i] != pad) fail_msg("embedding wrote padding");
    }
    free(src);
    free(table);
    free(kept);
    free(ids);
    free(out);
}

static void test_embedding_half(void **state) {
    (void)state;
    static const pagoda_dtype_t tables[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16,
                                            PAGODA_DTYPE_F16};
    test_rng_t rng;
    test_rng_seed(&rng, 26);
    for (size_t o = 0; o < 2; ++o)
        for (size_t t = 0; t < 3; ++t) {
            embedding_half_case(&rng, tables[t], kHalfTypes[o], 1, 1, 1, 0);
            embedding_half_case(&rng, tables[t], kHalfTypes[o], 100, 33, 5, 40);
            embedding_half_case(&rng, tables[t], kHalfTypes[o], 1000, 515, 300, 0);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embedding_bad_ids),
        cmocka_unit_test(test_silu_mul_half),
        cmocka_unit_test(test_add_half),
        cmocka_unit_test(test_embedding_half),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
