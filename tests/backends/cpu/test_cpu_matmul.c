/* PAGODA_OP_MATMUL on the CPU backend against a double-precision reference computed on exactly the
 * weights and activations the kernel sees (test_convert_weights' kept values), so every type must
 * match to f32 rounding, plus the output type's one rounding for bf16/f16 y. Sizes straddle the backend's GEMV/sgemm split and its tile and vector widths;
 * padding of strided arrays is NaN on input (must not be read) and a sentinel on output (must
 * not be written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define TOL 1e-5
#define Y_SENTINEL 12288.0f /* 3 · 2^12: exact in every activation type */

static const pagoda_dtype_t kWeightTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16,
                                              PAGODA_DTYPE_F16};

typedef struct matmul_case {
    int64_t m, n, k;
    pagoda_dtype_t w_dtype;
    int strided;
    int with_bias;
    int accumulate;
    pagoda_dtype_t x_dtype, y_dtype; /* 0: f32 */
    int32_t variant;                 /* ops.h's `variant`: 0 = the backend's rules */
} matmul_case_t;

/* Element i of an array of `dtype` as a double. */
static double load(pagoda_dtype_t dtype, const void *base, int64_t i) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return test_bf16_to_f32(((const uint16_t *)base)[i]);
        case PAGODA_DTYPE_F16: return test_f16_to_f32(((const uint16_t *)base)[i]);
        default: return ((const float *)base)[i];
    }
}

/* The unit roundoff of an output type: its result is the exact value within this relative
 * error (round to nearest), on top of the f32 computation's own TOL. */
static double unit_roundoff(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return ldexp(1.0, -8);
        case PAGODA_DTYPE_F16: return ldexp(1.0, -11);
        default: return 0.0;
    }
}

/* `n` random values of `dtype` (strided rows of `len` used elements, the rest `pad`), written
 * to a new array; the values kept go to `kept`. */
static void *random_rows(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t len,
                         int64_t ld, float pad, double *kept) {
    float *src = test_xmalloc(sizeof(float) * (size_t)(rows * ld));
    void *out = test_xmalloc(pagoda_dtype_size(dtype) * (size_t)(rows * ld));
    for (int64_t i = 0; i < rows * ld; ++i) src[i] = pad;
    for (int64_t i = 0; i < rows; ++i) test_fill_uniform(rng, src + i * ld, (size_t)len, -1.0f, 1.0f);
    test_convert_weights(dtype, src, (size_t)(rows * ld), out, kept);
    free(src);
    return out;
}

static void run_case(test_rng_t *rng, matmul_case_t c) {
    const pagoda_dtype_t x_dtype = c.x_dtype ? c.x_dtype : PAGODA_DTYPE_F32;
    const pagoda_dtype_t y_dtype = c.y_dtype ? c.y_dtype : PAGODA_DTYPE_F32;
    const int64_t ldx = c.strided ? c.k + 3 : c.k;
    const int64_t ldw = c.strided ? c.k + 5 : c.k;
    const int64_t ldy = c.strided ? c.n + 2 : c.n;

    double *x_kept = test_xmalloc(sizeof(double) * (size_t)(c.m * ldx));
    double *w_kept = test_xmalloc(sizeof(double) * (size_t)(c.n * ldw));
    double *y_kept = test_xmalloc(sizeof(double) * (size_t)(c.m * ldy));
    void *x = random_rows(rng, x_dtype, c.m, c.k, ldx, NAN, x_kept);
    void *w = random_rows(rng, c.w_dtype, c.n, c.k, ldw, NAN, w_kept);
    void *y = random_rows(rng, y_dtype, c.m, c.n, ldy, Y_SENTINEL, y_kept);
    float *bias = c.with_bias ? test_xmalloc(sizeof(float) * (size_t)c.n) : NULL;
    double *ref = test_xmalloc(sizeof(double) * (size_t)(c.m * c.n));
    if (bias) test_fill_uniform(rng, bias, (size_t)c.n, -1.0f, 1.0f);

    double ref_max = 1e-30;
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
            double s = 0.0;
            for (int64_t q = 0; q < c.k; ++q) s += x_kept[i * ldx + q] * w_kept[j * ldw + q];
            if (bias) s += bias[j];
            if (c.accumulate) s += y_kept[i * ldy + j];
            ref[i * c.n + j] = s;
            if (fabs(s) > ref_max) ref_max = fabs(s);
        }

    pagoda_op_matmul_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.flags = c.accumulate ? PAGODA_MATMUL_ACCUMULATE : 0u;
    a.x_dtype = x_dtype;
    a.w_dtype = c.w_dtype;
    a.y_dtype = y_dtype;
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
    a.variant = c.variant;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &a));

    /* Each element within the output type's rounding of the exact value, plus f32 error. */
    const double u = unit_roundoff(y_dtype);
    for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
            const double got = load(y_dtype, y, i * ldy + j), want = ref[i * c.n + j];
            if (!(fabs(got - want) <= u * fabs(want) + TOL * ref_max))
                fail_msg("matmul m=%lld n=%lld k=%lld x=%s w=%s y=%s strided=%d bias=%d acc=%d "
                         "variant=%d: y[%lld,%lld] = %.9g, want %.9g",
                         (long long)c.m, (long long)c.n, (long long)c.k,
                         pagoda_dtype_name(x_dtype), pagoda_dtype_name(c.w_dtype),
                         pagoda_dtype_name(y_dtype), c.strided, c.with_bias, c.accumulate,
                         (int)c.variant, (long long)i, (long long)j, got, want);
        }
        for (int64_t j = c.n; j < ldy; ++j)
            if (load(y_dtype, y, i * ldy + j) != Y_SENTINEL)
                fail_msg("matmul wrote y padding at row %lld col %lld", (long long)i, (long long)j);
    }

    free(x);
    free(w);
    free(y);
    free(x_kept);
    free(w_kept);
    free(y_kept);
    free(bias);
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
                matmul_case_t c = {ms[a], nk[b][0], nk[b][1], kWeightTypes[t], 0, 0, 0, 0, 0, 0};
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
                                       1,     flags & 1, (flags >> 1) & 1, 0, 0, 0};
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
        matmul_case_t prefill = {33, 300, 4099, kWeightTypes[t], 1, 1, 1, 0, 0, 0};
        run_case(&rng, prefill);
        matmul_case_t decode = {1, 2051, 2048, kWeightTypes[t], 0, 1, 0, 0, 0, 0};
        run_case(&rng, decode);
    }
}

/* bf16/f16 x and y (ops.h: any mix of the three types): every combination on the GEMV (m of 1
 * and 5) and on sgemm (m = 40), strided, with bias and accumulation in turn. */
static void test_matmul_half_activations(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 5, 40};
    test_rng_t rng;
    test_rng_seed(&rng, 4);
    int turn = 0;
    for (size_t xt = 0; xt < 3; ++xt)
        for (size_t wt = 0; wt < 3; ++wt)
            for (size_t yt = 0; yt < 3; ++yt)
                for (size_t a = 0; a < sizeof ms / sizeof ms[0]; ++a, ++turn) {
                    matmul_case_t c = {ms[a], 37, 75, kWeightTypes[wt], turn % 2, (turn / 2) % 2,
                                       (turn / 4) % 2, kWeightTypes[xt], kWeightTypes[yt], 0};
                    run_case(&rng, c);
                }
}

/* A row of y so long that the f32 staging of half activations takes 33 rows at a time: m = 40
 * runs as a block of 33 on sgemm and one of 7 on the GEMV. */
static void test_matmul_staged_blocks(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 5);
    matmul_case_t c = {40,  262144, 8, PAGODA_DTYPE_BF16, 0, 1, 1, PAGODA_DTYPE_BF16,
                       PAGODA_DTYPE_BF16, 0};
    run_case(&rng, c);
    matmul_case_t f16 = {40, 262144, 8, PAGODA_DTYPE_F32, 1, 0, 1, PAGODA_DTYPE_F16,
                         PAGODA_DTYPE_F16, 0};
    run_case(&rng, f16);
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
    EXPECT_REJECTED(x_dtype, PAGODA_DTYPE_I32, PAGODA_ERR_UNSUPPORTED, "x_dtype");
    EXPECT_REJECTED(x_dtype, PAGODA_DTYPE_INVALID, PAGODA_ERR_INVALID_ARGUMENT, "x_dtype");
    EXPECT_REJECTED(y_dtype, PAGODA_DTYPE_U8, PAGODA_ERR_UNSUPPORTED, "y_dtype");
    EXPECT_REJECTED(y_dtype, (pagoda_dtype_t)77, PAGODA_ERR_UNSUPPORTED, "y_dtype = unknown (77)");
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

/* ABI 1.6: the variants a host may pin run every case the rules would: the GEMV (1) at a
 * prefill's m, past where the rules switch to sgemm, and sgemm (3) at decode m, with every
 * type, half activations, strides, bias and accumulation. (gemv_int8, 2, needs block weights:
 * test_cpu_quant_matmul.) */
static void test_matmul_pinned_variants(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 5, 40, 100};
    static const int32_t variants[] = {1, 3};
    test_rng_t rng;
    test_rng_seed(&rng, 6);
    int turn = 0;
    for (size_t v = 0; v < 2; ++v)
        for (size_t wt = 0; wt < 3; ++wt)
            for (size_t a = 0; a < sizeof ms / sizeof ms[0]; ++a)
                for (int flags = 0; flags < 4; ++flags, ++turn) {
                    matmul_case_t c = {ms[a], 37, 75, kWeightTypes[wt], flags & 1, (flags >> 1) & 1,
                                       turn % 2, kWeightTypes[turn % 3], kWeightTypes[(turn / 3) % 3],
                                       variants[v]};
                    run_case(&rng, c);
                }
    /* A pinned GEMV over so long a k that it takes x in blocks of 32 rows (2 MiB of f32): 70
     * rows as 32 + 32 + 6, strided, with bias and accumulation, f32 and staged half x. */
    for (size_t xt = 0; xt < 2; ++xt) {
        matmul_case_t c = {70, 9, 16400, PAGODA_DTYPE_BF16, 1, 1, 1, kWeightTypes[xt], 0, 1};
        run_case(&rng, c);
    }
}

/* The variants' names, and what each refuses: an unknown index, a negative one, the int8
 * route without its leave. */
static void test_matmul_variant_names(void **state) {
    (void)state;
    const pagoda_backend_iface_t *f = test_cpu_iface();
    assert_true(f->kernels->struct_size >= sizeof(pagoda_backend_kernels_t));
    assert_non_null(f->kernels->variant_name);
    static const char *const names[] = {"gemv", "gemv_int8", "sgemm"};
    for (int32_t v = 1; v <= 3; ++v)
        assert_string_equal(f->kernels->variant_name(f->self, 0, PAGODA_OP_MATMUL, v), names[v - 1]);
    assert_null(f->kernels->variant_name(f->self, 0, PAGODA_OP_MATMUL, 4));
    assert_null(f->kernels->variant_name(f->self, 0, PAGODA_OP_MATMUL, 0));
    assert_null(f->kernels->variant_name(f->self, 0, PAGODA_OP_RMSNORM, 1));
    assert_null(f->kernels->variant_name(f->self, 99, PAGODA_OP_MATMUL, 1));

    pagoda_op_matmul_t a = valid_descriptor();
    a.variant = 4;
    test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_UNSUPPORTED, "3 matmul variants");
    a.variant = -1;
    test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT, "variant = -1");
    a.variant = 2;
    test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_UNSUPPORTED, "gemv_int8");
    /* A caller of ABI 1.5 (no `variant`) is still read, as the rules. */
    a = valid_descriptor();
    a.struct_size = (uint32_t)offsetof(pagoda_op_matmul_t, variant);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_strided_bias_accumulate),
        cmocka_unit_test(test_matmul_large),
        cmocka_unit_test(test_matmul_half_activations),
        cmocka_unit_test(test_matmul_staged_blocks),
        cmocka_unit_test(test_matmul_rejects),
        cmocka_unit_test(test_matmul_pinned_variants),
        cmocka_unit_test(test_matmul_variant_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
