/* PAGODA_OP_MATMUL on the CPU backend against a double-precision reference computed on exactly the
 * weights the kernel sees (test_convert_weights' kept values), so every weight type must match to
 * f32 rounding. Sizes straddle the backend's GEMV/sgemm split and its tile and vector widths;
 * padding of strided arrays is NaN on input (must not be read) and a sentinel on output (must
 * not be written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define TOL 1e-5
#define Y_SENTINEL 12345.0f

static const pagoda_dtype_t kWeightTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16,
                                              PAGODA_DTYPE_F16};

typedef struct matmul_case {
    int64_t m, n, k;
    pagoda_dtype_t w_dtype;
    int strided;
    int with_bias;
    int accumulate;
} matmul_case_t;

static void run_case(test_rng_t *rng, matmul_case_t c) {
    const int64_t ldx = c.strided ? c.k + 3 : c.k;
    const int64_t ldw = c.strided ? c.k + 5 : c.k;
    const int64_t ldy = c.strided ? c.n + 2 : c.n;
    const size_t w_elem = pagoda_dtype_size(c.w_dtype);

    float *x = test_xmalloc(sizeof(float) * (size_t)(c.m * ldx));
    float *w_src = test_xmalloc(sizeof(float) * (size_t)(c.n * ldw));
    void *w = test_xmalloc(w_elem * (size_t)(c.n * ldw));
    double *w_kept = test_xmalloc(sizeof(double) * (size_t)(c.n * ldw));
    float *bias = c.with_bias ? test_xmalloc(sizeof(float) * (size_t)c.n) : NULL;
    float *y = test_xmalloc(sizeof(float) * (size_t)(c.m * ldy));
    float *got = test_xmalloc(sizeof(float) * (size_t)(c.m * c.n));
    double *ref = test_xmalloc(sizeof(double) * (size_t)(c.m * c.n));

    for (int64_t i = 0; i < c.m * ldx; ++i) x[i] = NAN;
    for (int64_t i = 0; i < c.n * ldw; ++i) w_src[i] = NAN;
    for (int64_t i = 0; i < c.m; ++i) test_fill_uniform(rng, x + i * ldx, (size_t)c.k, -1.0f, 1.0f);
    for (int64_t j = 0; j < c.n; ++j)
        test_fill_uniform(rng, w_src + j * ldw, (size_t)c.k, -1.0f, 1.0f);
    test_convert_weights(c.w_dtype, w_src, (size_t)(c.n * ldw), w, w_kept);
    if (bias) test_fill_uniform(rng, bias, (size_t)c.n, -1.0f, 1.0f);
    for (int64_t i = 0; i < c.m * ldy; ++i) y[i] = Y_SENTINEL;
    for (int64_t i = 0; i < c.m; ++i) test_fill_uniform(rng, y + i * ldy, (size_t)c.n, -1.0f, 1.0f);

    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
            double s = 0.0;
            for (int64_t q = 0; q < c.k; ++q) s += (double)x[i * ldx + q] * w_kept[j * ldw + q];
            if (bias) s += bias[j];
            if (c.accumulate) s += y[i * ldy + j];
            ref[i * c.n + j] = s;
        }

    pagoda_op_matmul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.flags = c.accumulate ? PAGODA_MATMUL_ACCUMULATE : 0u;
    a.x_dtype = PAGODA_DTYPE_F32;
    a.w_dtype = c.w_dtype;
    a.y_dtype = PAGODA_DTYPE_F32;
    a.m = c.m;
    a.n = c.n;
    a.k = c.k;
    a.x = x;
    a.ldx = c.strided ? ldx : 0;
    a.w = w;
    a.ldw = c.strided ? ldw : 0;
    a.bias = bias;
    a.y = y;
    a.ldy = c.strided ? ldy : 0;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &a));

    for (int64_t i = 0; i < c.m; ++i) {
        memcpy(got + i * c.n, y + i * ldy, sizeof(float) * (size_t)c.n);
        for (int64_t j = c.n; j < ldy; ++j)
            if (y[i * ldy + j] != Y_SENTINEL)
                fail_msg("matmul wrote y padding at row %lld col %lld", (long long)i, (long long)j);
    }
    const double err = test_rel_error(got, ref, (size_t)(c.m * c.n));
    if (!(err <= TOL))
        fail_msg("matmul m=%lld n=%lld k=%lld w=%s strided=%d bias=%d acc=%d: rel error %g > %g",
                 (long long)c.m, (long long)c.n, (long long)c.k, pagoda_dtype_name(c.w_dtype),
                 c.strided, c.with_bias, c.accumulate, err, TOL);

    free(x);
    free(w_src);
    free(w);
    free(w_kept);
    free(bias);
    free(y);
    free(got);
    free(ref);
}

/* Every small m the GEMV tiles in groups of 1–3 rows, and m = 64 past the backend's sgemm
 * switch (m > 32), against n and k that are 1, below and above the vector width, the cache line
 * and the 4-row W tile. */
static void test_matmul_shapes(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 64};
    static const int64_t nk[][2] = {{1, 1}, {5, 33}, {33, 5}, {64, 8}, {257, 1000}, {1000, 257}};
    test_rng_t rng;
    test_rng_seed(&rng, 1);
    for (size_t t = 0; t < 3; ++t)
        for (size_t a = 0; a < sizeof ms / sizeof ms[0]; ++a)
            for (size_t b = 0; b < sizeof nk / sizeof nk[0]; ++b) {
                matmul_case_t c = {ms[a], nk[b][0], nk[b][1], kWeightTypes[t], 0, 0, 0};
                run_case(&rng, c);
            }
}

static void test_matmul_strided_bias_accumulate(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 3, 7, 9, 17, 40};
    static const int64_t nk[][2] = {{5, 33}, {257, 100}, {31, 257}};
    test_rng_t rng;
    test_rng_seed(&rng, 2);
    for (size_t t = 0; t < 3; ++t)
        for (size_t a = 0; a < sizeof ms / sizeof ms[0]; ++a)
            for (size_t b = 0; b < sizeof nk / sizeof nk[0]; ++b)
                for (int flags = 0; flags < 4; ++flags) {
                    matmul_case_t c = {ms[a], nk[b][0],  nk[b][1],        kWeightTypes[t],
                                       1,     flags & 1, (flags >> 1) & 1};
                    run_case(&rng, c);
                }
}

/* m = 33 is the smallest m on the sgemm route; its large k makes bf16/f16 W widen in several
 * panels. The decode shape runs the GEMV on many tiles across the pool. */
static void test_matmul_large(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 3);
    for (size_t t = 0; t < 3; ++t) {
        matmul_case_t prefill = {33, 300, 4099, kWeightTypes[t], 1, 1, 1};
        run_case(&rng, prefill);
        matmul_case_t decode = {1, 2051, 2048, kWeightTypes[t], 0, 1, 0};
        run_case(&rng, decode);
    }
}

static pagoda_op_matmul_t valid_descriptor(void) {
    pagoda_op_matmul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.x_dtype = PAGODA_DTYPE_F32;
    a.w_dtype = PAGODA_DTYPE_BF16;
    a.y_dtype = PAGODA_DTYPE_F32;
    a.m = 2;
    a.n = 3;
    a.k = 4;
    return a;
}

static void test_matmul_rejects(void **state) {
    (void)state;
    pagoda_op_matmul_t a = valid_descriptor();
    /* pointers NULL: only the description is read */
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));

    /* Each breaks one field of a valid descriptor: supports refuses it and names the field. */
#define EXPECT_REJECTED(field, value, status, needle)                   \
    do {                                                                \
        a = valid_descriptor();                                         \
        a.field = value;                                                \
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, status, needle); \
    } while (0)

    EXPECT_REJECTED(w_dtype, PAGODA_DTYPE_I8, PAGODA_ERR_UNSUPPORTED, "w_dtype");
    EXPECT_REJECTED(x_dtype, PAGODA_DTYPE_F16, PAGODA_ERR_UNSUPPORTED, "x_dtype");
    EXPECT_REJECTED(y_dtype, PAGODA_DTYPE_BF16, PAGODA_ERR_UNSUPPORTED, "y_dtype");
    /* a type from some later ABI */
    EXPECT_REJECTED(w_dtype, (pagoda_dtype_t)99, PAGODA_ERR_UNSUPPORTED, "w_dtype = unknown (99)");
    EXPECT_REJECTED(w_dtype, PAGODA_DTYPE_INVALID, PAGODA_ERR_INVALID_ARGUMENT, "w_dtype");
    EXPECT_REJECTED(flags, 0x80u, PAGODA_ERR_UNSUPPORTED, "flags");
    EXPECT_REJECTED(m, 0, PAGODA_ERR_INVALID_ARGUMENT, "m = 0");
    EXPECT_REJECTED(k, -4, PAGODA_ERR_INVALID_ARGUMENT, "k = -4");
    EXPECT_REJECTED(ldx, 3, PAGODA_ERR_INVALID_ARGUMENT, "ldx = 3");
    EXPECT_REJECTED(ldw, -1, PAGODA_ERR_INVALID_ARGUMENT, "ldw");
    EXPECT_REJECTED(ldy, 2, PAGODA_ERR_INVALID_ARGUMENT, "ldy = 2");
#undef EXPECT_REJECTED
    a = valid_descriptor();
    a.m = INT64_MAX / 2;
    a.ldx = 8;
    test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT, "address space");

    /* launch checks what supports cannot: the pointers */
    float buf[32] = {0};
    a = valid_descriptor();
    a.x = buf;
    a.y = buf + 16;
    pagoda_clear_error();
    test_expect_failure(test_cpu_launch(PAGODA_OP_MATMUL, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "w is NULL");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_strided_bias_accumulate),
        cmocka_unit_test(test_matmul_large),
        cmocka_unit_test(test_matmul_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
