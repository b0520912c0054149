/* PAGODA_OP_ATTENTION_MERGE (cache parallelism, ABI 1.2) on its own on the CPU backend, against
 * the merge in double that ops.h defines: random parts and lse, parts and rows that saw no key,
 * padded out rows, with and without lse_out, f32 and half activations. Merges of real shards'
 * results are test_cpu_paged_attention_shards.c's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static size_t act_size(pagoda_dtype_t act) { return act == PAGODA_DTYPE_F32 ? 4 : 2; }

static float load_act(pagoda_dtype_t act, const void *base, int64_t i) {
    if (act == PAGODA_DTYPE_BF16) return test_bf16_to_f32(((const uint16_t *)base)[i]);
    if (act == PAGODA_DTYPE_F16) return test_f16_to_f32(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

/* f32 accumulation plus one rounding of a half output. */
static double out_bound(pagoda_dtype_t act) {
    const double eps = act == PAGODA_DTYPE_BF16  ? 1.0 / 256
                       : act == PAGODA_DTYPE_F16 ? 1.0 / 2048
                                                 : 0.0;
    return 1e-5 + eps;
}

static int lse_close(float got, double want) {
    if (isinf(want)) return isinf(got) && got < 0;
    return fabs((double)got - want) <= 1e-4 * (fabs(want) > 1 ? fabs(want) : 1);
}

/* ATTENTION_MERGE alone: random parts and lse, a part with lse -inf (its values NaN: a part
 * that weighs 0 is not read), a row where every part is -inf, padded out rows, no lse_out. */
static void run_merge(pagoda_dtype_t act, int lse_out_wanted, uint64_t seed) {
    enum { P = 3, T = 5, H = 4, D = 24, STRIDE = H * D + 5 };
    const int64_t rows = T * H;
    test_rng_t rng;
    test_rng_seed(&rng, seed);
    float parts_f[P * T * H * D], lse[P * T * H];
    test_fill_uniform(&rng, parts_f, P * T * H * D, -1.0f, 1.0f);
    test_fill_uniform(&rng, lse, P * T * H, -6.0f, 6.0f);
    for (int64_t r = 0; r < rows; r += 3) lse[1 * rows + r] = -INFINITY; /* part 1 saw nothing */
    for (int p = 0; p < P; ++p) lse[p * rows + 7] = -INFINITY;          /* row 7: nobody did */
    unsigned char parts[P * T * H * D * 4];
    double kept[P * T * H * D];
    test_convert_weights(act, parts_f, P * T * H * D, parts, kept);
    for (int64_t r = 0; r < rows; ++r)
        if (isinf(lse[1 * rows + r]))
            memset(parts + (size_t)((rows + r) * D) * act_size(act), 0xFF, D * act_size(act));

    unsigned char out[T * STRIDE * 4];
    float lse_out[T * H];
    memset(out, 0x5A, sizeof out);
    pagoda_op_attention_merge_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.n_parts = P;
    m.n_tokens = T;
    m.n_heads = H;
    m.head_dim = D;
    m.parts = parts;
    m.lse = lse;
    m.out = out;
    m.out_token_stride = STRIDE;
    m.lse_out = lse_out_wanted ? lse_out : NULL;
    m.act_dtype = act == PAGODA_DTYPE_F32 ? PAGODA_DTYPE_INVALID : act; /* 0 means f32 */
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ATTENTION_MERGE, &m));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ATTENTION_MERGE, &m));

    float got[T * H * D];
    double ref[T * H * D];
    for (int64_t r = 0; r < rows; ++r) {
        double max = -INFINITY, sum = 0.0;
        for (int p = 0; p < P; ++p)
            if (lse[p * rows + r] > max) max = lse[p * rows + r];
        double w[P];
        for (int p = 0; p < P; ++p) sum += w[p] = isinf(max) ? 0.0 : exp(lse[p * rows + r] - max);
        for (int64_t e = 0; e < D; ++e) {
            double acc = 0.0;
            for (int p = 0; p < P; ++p)
                if (w[p] > 0) acc += w[p] / sum * kept[(p * rows + r) * D + e];
            ref[r * D + e] = acc;
            got[r * D + e] = load_act(act, out, (r / H) * STRIDE + (r % H) * D + e);
        }
        if (isinf(max))
            for (int64_t e = 0; e < D; ++e) assert_true(got[r * D + e] == 0.0f);
        if (lse_out_wanted) {
            const double want = isinf(max) ? -INFINITY : max + log(sum);
            if (!lse_close(lse_out[r], want))
                fail_msg("merge (%s): row %lld lse_out %.7g, want %.7g", pagoda_dtype_name(act),
                         (long long)r, lse_out[r], want);
        }
    }
    /* The padding between token rows is left alone. */
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = H * D * (int64_t)act_size(act); e < STRIDE * (int64_t)act_size(act); ++e)
            assert_int_equal(out[t * STRIDE * (int64_t)act_size(act) + e], 0x5A);
    const double err = test_rel_error(got, ref, T * H * D);
    const double bound = out_bound(act);
    if (!(err <= bound))
        fail_msg("merge (%s): relative error %.3g > %.1e", pagoda_dtype_name(act), err, bound);
}

static void test_merge(void **state) {
    (void)state;
    run_merge(PAGODA_DTYPE_F32, 1, 1300);
    run_merge(PAGODA_DTYPE_BF16, 1, 1301);
    run_merge(PAGODA_DTYPE_F16, 0, 1302);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
