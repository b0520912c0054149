/* Backend conformance: every op of ops.h on many random cases, on the reference (the CPU
 * backend as built) and on each backend under test (the CPU backend again with isa=portable;
 * the CUDA backend when it is built and a device is present), compared output by output and
 * status by status; and `supports` compared on valid and invalid descriptors.
 *
 * Environment:
 *   PAGODA_CONFORMANCE_REQUIRE_CUDA=1  a CUDA backend that cannot run fails instead of skipping
 *   PAGODA_CONFORMANCE_PERTURB=1       perturb every under-test output slightly and require the
 *                                      comparison to catch it (the suite's own check) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* One cmocka test per op family, so a failing backend shows which kernels are wrong. */
#define CONFORMANCE_TEST(name, generator, what)     \
    static void name(void **state) {                \
        (void)state;                                \
        conf_tally_t tally = {0};                   \
        generator(&tally);                          \
        conf_finish(what, &tally);                  \
    }

CONFORMANCE_TEST(test_matmul, conf_cases_matmul, "matmul")
CONFORMANCE_TEST(test_embedding, conf_cases_embedding, "embedding")
CONFORMANCE_TEST(test_rmsnorm, conf_cases_rmsnorm, "rmsnorm")
CONFORMANCE_TEST(test_rope, conf_cases_rope, "rope")
CONFORMANCE_TEST(test_elementwise, conf_cases_elementwise, "silu_mul, add")
CONFORMANCE_TEST(test_softcap, conf_cases_softcap, "softcap")
CONFORMANCE_TEST(test_rowwise, conf_cases_rowwise, "argmax, softmax")
CONFORMANCE_TEST(test_kv_write, conf_cases_kv_write, "kv_write")
CONFORMANCE_TEST(test_paged_attention, conf_cases_paged_attention, "paged_attention")
CONFORMANCE_TEST(test_paged_attention_odd_shapes, conf_cases_paged_attention_odd,
                 "paged_attention (odd shapes)")
CONFORMANCE_TEST(test_paged_attention_softcap, conf_cases_paged_attention_softcap,
                 "paged_attention (soft-capped scores)")
CONFORMANCE_TEST(test_copy_swap_blocks, conf_cases_copy_blocks, "copy_blocks, swap_blocks")
CONFORMANCE_TEST(test_descriptor_agreement, conf_cases_descriptors, "supports agreement")
CONFORMANCE_TEST(test_sample, conf_cases_sample, "sample")
CONFORMANCE_TEST(test_quantized_weights, conf_cases_quantized,
                 "matmul and embedding with quantized block weights")
CONFORMANCE_TEST(test_attention_shards, conf_cases_attention_shards,
                 "paged_attention over a KV shard, attention_merge")
CONFORMANCE_TEST(test_moe, conf_cases_moe, "moe_route, moe_matmul")

/* The comparisons themselves: each must reject an output that is off by a little more than it
 * tolerates, and accept one within it. */
static void test_comparisons_catch_errors(void **state) {
    (void)state;
    char why[256];
    float ref[6] = {1.0f, -2.0f, 0.5f, 4.0f, 0.0f, -0.25f}, got[6];
    conf_tensor_t f32 = {"y", NULL, sizeof ref, CONF_DEVICE, CONF_F32, 1e-5, 0, 0, 0, NULL};
    memcpy(got, ref, sizeof ref);
    assert_true(conf_compare_tensor(&f32, ref, got, NULL, why, sizeof why));
    got[2] += 3e-5f; /* 0.75e-5 of max |ref| = 4: within */
    assert_true(conf_compare_tensor(&f32, ref, got, NULL, why, sizeof why));
    got[2] += 1e-4f; /* 3.25e-5 of 4: beyond */
    assert_false(conf_compare_tensor(&f32, ref, got, NULL, why, sizeof why));
    assert_non_null(strstr(why, "element 2"));
    memcpy(got, ref, sizeof ref);
    got[4] = NAN;
    assert_false(conf_compare_tensor(&f32, ref, got, NULL, why, sizeof why));

    unsigned char a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 2, 3, 4, 5};
    conf_tensor_t exact = {"cache", NULL, sizeof a, CONF_DEVICE, CONF_EXACT, 0, 0, 0, 0, NULL};
    assert_true(conf_compare_tensor(&exact, a, b, NULL, why, sizeof why));
    b[4] ^= 0x80;
    assert_false(conf_compare_tensor(&exact, a, b, NULL, why, sizeof why));
    assert_non_null(strstr(why, "byte 4"));

    /* Argmax: exact unless the scores nearly tie within the tolerance. */
    const float scores[2][4] = {{0.0f, 3.0f, 3.0f, 1.0f}, {5.0f, 4.99999f, 1.0f, 0.0f}};
    int32_t want[2] = {1, 0}, have[2] = {1, 0};
    conf_tensor_t am = {"out", NULL, sizeof want, CONF_DEVICE, CONF_ARGMAX, 0.0, 0, 4, 4, NULL};
    assert_true(conf_compare_tensor(&am, want, have, &scores[0][0], why, sizeof why));
    have[0] = 2; /* an exact tie: only the lowest index is right */
    assert_false(conf_compare_tensor(&am, want, have, &scores[0][0], why, sizeof why));
    have[0] = 1;
    have[1] = 1; /* 1e-5 apart, 2e-6 of max |score| 5: a near-tie under 1e-5 */
    assert_false(conf_compare_tensor(&am, want, have, &scores[0][0], why, sizeof why));
    am.tolerance = 1e-5;
    assert_true(conf_compare_tensor(&am, want, have, &scores[0][0], why, sizeof why));
    have[1] = 4; /* out of range */
    assert_false(conf_compare_tensor(&am, want, have, &scores[0][0], why, sizeof why));
}

static int release_backends(void **state) {
    (void)state;
    conf_backends_release();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons_catch_errors),
        cmocka_unit_test(test_descriptor_agreement),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_rowwise),
        cmocka_unit_test(test_kv_write),
        cmocka_unit_test(test_paged_attention),
        cmocka_unit_test(test_paged_attention_odd_shapes),
        cmocka_unit_test(test_paged_attention_softcap),
        cmocka_unit_test(test_copy_swap_blocks),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_quantized_weights),
        cmocka_unit_test(test_attention_shards),
        cmocka_unit_test(test_moe),
    };
    return cmocka_run_group_tests(tests, NULL, release_backends);
}
