/* PAGODA_OP_ARGMAX and PAGODA_OP_SOFTMAX on the CPU backend against double-precision references:
 * ties, strided rows, scale (0 meaning 1), logits large enough to overflow a naive softmax, and
 * out aliasing x; then bf16/f16 rows (act_dtype), against references on the values kept. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SENTINEL 4242.0f

static void argmax_case(test_rng_t *rng, int64_t rows, int64_t cols, int64_t ldx, int ties) {
    const int64_t ld = ldx ? ldx : cols;
    float *x = test_xmalloc(sizeof(float) * (size_t)(rows * ld));
    int32_t *out = test_xmalloc(sizeof(int32_t) * (size_t)rows);
    int32_t *want = test_xmalloc(sizeof(int32_t) * (size_t)rows);
    for (int64_t i = 0; i < rows * ld; ++i) x[i] = 1000.0f; /* padding beats every value */
    for (int64_t r = 0; r < rows; ++r) {
        float *row = x + r * ld;
        test_fill_uniform(rng, row, (size_t)cols, -5.0f, 5.0f);
        if (ties) {
            /* the same maximum at two or three places: the lowest index wins */
            int64_t first = test_rng_int(rng, 0, cols - 1);
            int64_t second = test_rng_int(rng, 0, cols - 1);
            row[first] = row[second] = row[cols - 1] = 9.0f;
        }
        int64_t best = 0;
        for (int64_t i = 1; i < cols; ++i)
            if (row[i] > row[best]) best = i;
        want[r] = (int32_t)best;
    }
    pagoda_op_argmax_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = rows;
    a.cols = cols;
    a.x = x;
    a.ldx = ldx;
    a.out = out;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ARGMAX, &a));
    for (int64_t r = 0; r < rows; ++r)
        if (out[r] != want[r])
            fail_msg("argmax rows=%lld cols=%lld ties=%d row %lld: got %d, want %d",
                     (long long)rows, (long long)cols, ties, (long long)r, out[r], want[r]);
    free(x);
    free(out);
    free(want);
}

static void test_argmax(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 31);
    argmax_case(&rng, 1, 1, 0, 0);
    argmax_case(&rng, 3, 7, 0, 0);
    argmax_case(&rng, 3, 7, 9, 1);
    argmax_case(&rng, 5, 32000, 32003, 1);
    argmax_case(&rng, 64, 1000, 0, 1);
}

/* Logits uniform in [lo, hi). */
static void softmax_case(test_rng_t *rng, int64_t rows, int64_t cols, float scale, float lo,
                         float hi, int alias, int64_t pad) {
    const int64_t ld = cols + pad;
    float *x = test_xmalloc(sizeof(float) * (size_t)(rows * ld));
    float *out_buf = alias ? NULL : test_xmalloc(sizeof(float) * (size_t)(rows * ld));
    double *ref = test_xmalloc(sizeof(double) * (size_t)(rows * cols));
    float *got = test_xmalloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * ld; ++i) x[i] = SENTINEL;
    for (int64_t r = 0; r < rows; ++r) test_fill_uniform(rng, x + r * ld, (size_t)cols, lo, hi);
    if (out_buf)
        for (int64_t i = 0; i < rows * ld; ++i) out_buf[i] = SENTINEL;
    const double s = scale == 0.0f ? 1.0 : (double)scale;
    for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < cols; ++i) mx = fmax(mx, s * x[r * ld + i]);
        for (int64_t i = 0; i < cols; ++i) sum += exp(s * x[r * ld + i] - mx);
        for (int64_t i = 0; i < cols; ++i) ref[r * cols + i] = exp(s * x[r * ld + i] - mx) / sum;
    }
    float *out = alias ? x : out_buf;

    pagoda_op_softmax_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = rows;
    a.cols = cols;
    a.scale = scale;
    a.x = x;
    a.ldx = pad ? ld : 0;
    a.out = out;
    a.ldo = pad ? ld : 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SOFTMAX, &a));

    for (int64_t r = 0; r < rows; ++r) {
        double total = 0.0;
        for (int64_t i = 0; i < cols; ++i) {
            got[r * cols + i] = out[r * ld + i];
            total += out[r * ld + i];
        }
        for (int64_t i = cols; i < ld; ++i)
            if (out[r * ld + i] != SENTINEL) fail_msg("softmax wrote padding");
        if (fabs(total - 1.0) > 1e-5)
            fail_msg("softmax row %lld sums to %.9f", (long long)r, total);
    }
    /* per row, relative to the row's largest probability */
    for (int64_t r = 0; r < rows; ++r) {
        const double err = test_rel_error(got + r * cols, ref + r * cols, (size_t)cols);
        if (!(err <= 1e-5))
            fail_msg("softmax rows=%lld cols=%lld scale=%g x in [%g, %g) alias=%d: rel error %g",
                     (long long)rows, (long long)cols, (double)scale, (double)lo, (double)hi, alias,
                     err);
    }
    free(x);
    free(out_buf);
    free(ref);
    free(got);
}

static void test_softmax(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 32);
    static const int64_t cols[] = {1, 7, 1000, 32000};
    static const float scales[] = {0.0f, 1.0f, 0.5f, 2.0f, -1.0f};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; ++c)
        for (size_t s = 0; s < sizeof scales / sizeof scales[0]; ++s) {
            softmax_case(&rng, 3, cols[c], scales[s], -4.0f, 4.0f, 0, 0);
            softmax_case(&rng, 2, cols[c], scales[s], -4.0f, 4.0f, 1, 3);
        }
    /* e^1000 overflows and e^-1000 underflows: only a max-subtracting softmax survives both */
    softmax_case(&rng, 4, 500, 1.0f, -1000.0f, 1000.0f, 0, 0);
    softmax_case(&rng, 4, 500, 0.0f, -1000.0f, 1000.0f, 1, 1);
    softmax_case(&rng, 4, 500, 1.0f, -1100.0f, -1090.0f, 0, 0);
    softmax_case(&rng, 4, 500, -1.0f, 1090.0f, 1100.0f, 1, 0);
    softmax_case(&rng, 100, 300, 0.7f, -8.0f, 8.0f, 1, 0); /* many rows across the pool */
}

#define HALF_SENTINEL 4096.0f /* exact in bf16 and f16 */

static double load_typed(pagoda_dtype_t dtype, const void *base, int64_t i) {
    return dtype == PAGODA_DTYPE_BF16 ? test_bf16_to_f32(((const uint16_t *)base)[i])
                                      : test_f16_to_f32(((const uint16_t *)base)[i]);
}

/* `rows` × `cols` values in [lo, hi) of `dtype`, rows `ld` apart, the rest `pad`; the values
 * kept go to `kept` if not NULL. */
static void *typed_rows(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                        int64_t ld, float lo, float hi, float pad, double *kept) {
    float *src = test_xmalloc(sizeof(float) * (size_t)(rows * ld));
    void *out = test_xmalloc(2 * (size_t)(rows * ld));
    for (int64_t i = 0; i < rows * ld; ++i) src[i] = pad;
    for (int64_t r = 0; r < rows; ++r) test_fill_uniform(rng, src + r * ld, (size_t)cols, lo, hi);
    test_convert_weights(dtype, src, (size_t)(rows * ld), out, kept);
    free(src);
    return out;
}

static void argmax_half_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                             int64_t ldx) {
    const int64_t ld = ldx ? ldx : cols;
    double *kept = test_xmalloc(sizeof(double) * (size_t)(rows * ld));
    /* Padding 1000 beats every value: reading it would show. Rounding to 8 or 11 bits makes
     * many ties among [-5, 5) values, which must go to the lowest index. */
    void *x = typed_rows(rng, dtype, rows, cols, ld, -5.0f, 5.0f, 1000.0f, kept);
    int32_t *out = test_xmalloc(sizeof(int32_t) * (size_t)rows);
    pagoda_op_argmax_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = rows;
    a.cols = cols;
    a.x = x;
    a.ldx = ldx;
    a.out = out;
    a.act_dtype = dtype;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ARGMAX, &a));
    for (int64_t r = 0; r < rows; ++r) {
        int64_t best = 0;
        for (int64_t i = 1; i < cols; ++i)
            if (kept[r * ld + i] > kept[r * ld + best]) best = i;
        if (out[r] != best)
            fail_msg("argmax %s rows=%lld cols=%lld row %lld: got %d, want %lld",
                     pagoda_dtype_name(dtype), (long long)rows, (long long)cols, (long long)r,
                     out[r], (long long)best);
    }
    free(kept);
    free(x);
    free(out);
}

static void softmax_half_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                              float scale, int alias, int64_t pad) {
    const int64_t ld = cols + pad;
    const double u = dtype == PAGODA_DTYPE_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
    double *kept = test_xmalloc(sizeof(double) * (size_t)(rows * ld));
    void *x = typed_rows(rng, dtype, rows, cols, ld, -6.0f, 6.0f, HALF_SENTINEL, kept);
    void *out = alias ? x : typed_rows(rng, dtype, rows, 0, ld, 0.0f, 0.0f, HALF_SENTINEL, NULL);
    double *ref = test_xmalloc(sizeof(double) * (size_t)cols);
    const double s = scale == 0.0f ? 1.0 : (double)scale;

    pagoda_op_softmax_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = rows;
    a.cols = cols;
    a.scale = scale;
    a.x = x;
    a.ldx = pad ? ld : 0;
    a.out = out;
    a.ldo = pad ? ld : 0;
    a.act_dtype = dtype;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SOFTMAX, &a));

    for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, sum = 0.0, ref_max = 0.0;
        for (int64_t i = 0; i < cols; ++i) mx = fmax(mx, s * kept[r * ld + i]);
        for (int64_t i = 0; i < cols; ++i) sum += exp(s * kept[r * ld + i] - mx);
        for (int64_t i = 0; i < cols; ++i) {
            ref[i] = exp(s * kept[r * ld + i] - mx) / sum;
            ref_max = fmax(ref_max, ref[i]);
        }
        /* One rounding of each probability, on top of the f32 computation's error; below
         * f16's smallest normal the rounding is absolute, half of 2^-24. */
        const double subnormal = dtype == PAGODA_DTYPE_F16 ? ldexp(1.0, -25) : 0.0;
        for (int64_t i = 0; i < cols; ++i) {
            const double got = load_typed(dtype, out, r * ld + i);
            if (!(fabs(got - ref[i]) <= u * ref[i] + subnormal + 1e-6 * ref_max))
                fail_msg("softmax %s cols=%lld scale=%g alias=%d: out[%lld,%lld] = %.9g, want "
                         "%.9g",
                         pagoda_dtype_name(dtype), (long long)cols, (double)scale, alias,
                         (long long)r, (long long)i, got, ref[i]);
        }
        for (int64_t i = cols; i < ld; ++i)
            if (load_typed(dtype, out, r * ld + i) != HALF_SENTINEL)
                fail_msg("softmax %s wrote padding", pagoda_dtype_name(dtype));
    }
    free(kept);
    free(x);
    if (!alias) free(out);
    free(ref);
}

static void test_rowwise_half(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 33);
    static const pagoda_dtype_t types[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (size_t t = 0; t < 2; ++t) {
        argmax_half_case(&rng, types[t], 1, 1, 0);
        argmax_half_case(&rng, types[t], 3, 7, 9);
        argmax_half_case(&rng, types[t], 5, 32000, 32003);
        argmax_half_case(&rng, types[t], 64, 1000, 0);
        softmax_half_case(&rng, types[t], 3, 1, 1.0f, 0, 0);
        softmax_half_case(&rng, types[t], 3, 33, 0.0f, 0, 2);
        softmax_half_case(&rng, types[t], 2, 1000, 0.5f, 1, 3);
        softmax_half_case(&rng, types[t], 2, 32000, -1.0f, 0, 0);
        softmax_half_case(&rng, types[t], 100, 300, 2.0f, 1, 0); /* many rows across the pool */
    }
}

static void test_rowwise_rejects(void **state) {
    (void)state;
    pagoda_op_softmax_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.rows = 1;
    s.cols = 4;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SOFTMAX, &s));
    s.scale = INFINITY;
    test_cpu_expect_rejected(PAGODA_OP_SOFTMAX, &s, PAGODA_ERR_INVALID_ARGUMENT, "scale");
    s.scale = 1.0f;
    s.ldo = 3;
    test_cpu_expect_rejected(PAGODA_OP_SOFTMAX, &s, PAGODA_ERR_INVALID_ARGUMENT, "ldo = 3");

    pagoda_op_argmax_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = 1;
    a.cols = (int64_t)INT32_MAX + 1;
    test_cpu_expect_rejected(PAGODA_OP_ARGMAX, &a, PAGODA_ERR_INVALID_ARGUMENT, "cols");

    /* act_dtype: 0 is f32 (an ABI 1.0 caller's struct ends before it); only float types. */
    a.cols = 4;
    a.struct_size = (uint32_t)offsetof(pagoda_op_argmax_t, act_dtype);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ARGMAX, &a));
    a.struct_size = sizeof a;
    a.act_dtype = PAGODA_DTYPE_I32;
    test_cpu_expect_rejected(PAGODA_OP_ARGMAX, &a, PAGODA_ERR_UNSUPPORTED, "act_dtype = i32");
    a.act_dtype = (pagoda_dtype_t)99;
    test_cpu_expect_rejected(PAGODA_OP_ARGMAX, &a, PAGODA_ERR_UNSUPPORTED, "act_dtype = unknown");
    s.ldo = 0;
    s.struct_size = (uint32_t)offsetof(pagoda_op_softmax_t, act_dtype);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SOFTMAX, &s));
    s.struct_size = sizeof s;
    s.act_dtype = PAGODA_DTYPE_U8;
    test_cpu_expect_rejected(PAGODA_OP_SOFTMAX, &s, PAGODA_ERR_UNSUPPORTED, "act_dtype = u8");
    /* the extent counts the activation type's bytes: 2^61 + 1 elements fit as bf16 only */
    s.act_dtype = PAGODA_DTYPE_BF16;
    s.rows = 2;
    s.ldx = s.ldo = (int64_t)1 << 61;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SOFTMAX, &s));
    s.act_dtype = PAGODA_DTYPE_F32;
    test_cpu_expect_rejected(PAGODA_OP_SOFTMAX, &s, PAGODA_ERR_INVALID_ARGUMENT, "address space");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_rowwise_half),
        cmocka_unit_test(test_rowwise_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
