/* MOE_ROUTE (ABI 1.8) on the CPU backend against a double-precision reference: random logits,
 * some drawn from a few values so that ties are common (the lower id goes first), −inf among
 * them, both routings, top_k 1 to 8 of 8 to 64 experts and the largest router ops.h allows
 * (1024 experts, top 64); ids must match exactly, weights within f32 rounding. A NaN logit is
 * refused before anything is written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SENTINEL_ID -7
#define SENTINEL_WEIGHT -555.0f

/* The reference's order of experts: larger logit first, equal logits by lower id. */
static const float *g_row;
static int by_rank(const void *a, const void *b) {
    const int i = *(const int *)a, j = *(const int *)b;
    if (g_row[i] != g_row[j]) return g_row[i] > g_row[j] ? -1 : 1;
    return i - j;
}

/* The softmax numerator in double; a logit equal to the row's maximum weighs 1 (the limit
 * where exp(x − max) is NaN: a +inf maximum, or a row of −inf). */
static double ref_numerator(float x, float max) {
    return x == max ? 1.0 : exp((double)x - (double)max);
}

/* Checks one launch's rows against the reference. */
static void check_rows(const float *logits, int64_t n_tokens, int64_t n_experts, int64_t top_k,
                       int32_t routing, const int32_t *ids, const float *weights) {
    int *order = test_xmalloc(sizeof(int) * (size_t)n_experts);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float *row = logits + t * n_experts;
        float max = -INFINITY;
        for (int64_t j = 0; j < n_experts; ++j) max = row[j] > max ? row[j] : max;
        double total = 0.0, picked = 0.0;
        for (int64_t j = 0; j < n_experts; ++j) {
            order[j] = (int)j;
            total += ref_numerator(row[j], max);
        }
        g_row = row;
        qsort(order, (size_t)n_experts, sizeof order[0], by_rank);
        for (int64_t s = 0; s < top_k; ++s) picked += ref_numerator(row[order[s]], max);
        const double denominator = routing == PAGODA_MOE_SOFTMAX_TOPK_NORM ? picked : total;
        for (int64_t s = 0; s < top_k; ++s) {
            const int32_t got_id = ids[t * top_k + s];
            if (got_id != order[s])
                fail_msg("moe_route %lld experts top %lld routing %d token %lld slot %lld: expert "
                         "%d (logit %.9g), want %d (logit %.9g)",
                         (long long)n_experts, (long long)top_k, routing, (long long)t,
                         (long long)s, got_id, (double)row[got_id], order[s],
                         (double)row[order[s]]);
            const double want = ref_numerator(row[order[s]], max) / denominator;
            const double got = weights[t * top_k + s];
            if (!(fabs(got - want) <= 1.2e-7 * want + 1e-30))
                fail_msg("moe_route %lld experts top %lld routing %d token %lld slot %lld: weight "
                         "%.9g, want %.9g",
                         (long long)n_experts, (long long)top_k, routing, (long long)t,
                         (long long)s, got, want);
        }
    }
    free(order);
}

static pagoda_op_moe_route_t route_args(int64_t n_tokens, int64_t n_experts, int64_t top_k,
                                        int32_t routing, const float *logits, int32_t *ids,
                                        float *weights) {
    pagoda_op_moe_route_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n_tokens = n_tokens;
    a.n_experts = n_experts;
    a.top_k = top_k;
    a.routing = routing;
    a.logits = logits;
    a.expert_ids = ids;
    a.weights = weights;
    return a;
}

/* `tied`: logits from {-2, -1.5, ..., 2} (many ties); else uniform in [-8, 8), a few −inf. */
static void route_case(test_rng_t *rng, int64_t n_tokens, int64_t n_experts, int64_t top_k,
                       int32_t routing, int tied) {
    const size_t n = (size_t)(n_tokens * n_experts), picks = (size_t)(n_tokens * top_k);
    float *logits = test_xmalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; ++i)
        logits[i] = tied ? 0.5f * (float)test_rng_int(rng, -4, 4) : test_rng_uniform(rng, -8, 8);
    if (!tied)
        for (int64_t t = 0; t < n_tokens && n_experts > top_k; ++t)
            logits[t * n_experts + test_rng_int(rng, 0, n_experts - 1)] = -INFINITY;
    int32_t *ids = test_xmalloc(sizeof(int32_t) * picks);
    float *weights = test_xmalloc(sizeof(float) * picks);
    const pagoda_op_moe_route_t a =
        route_args(n_tokens, n_experts, top_k, routing, logits, ids, weights);
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MOE_ROUTE, &a));
    check_rows(logits, n_tokens, n_experts, top_k, routing, ids, weights);
    free(logits);
    free(ids);
    free(weights);
}

static void test_route(void **state) {
    (void)state;
    static const int64_t experts[] = {8, 16, 60, 64};
    test_rng_t rng;
    test_rng_seed(&rng, 161);
    for (int32_t routing = 0; routing <= 1; ++routing)
        for (size_t e = 0; e < sizeof experts / sizeof experts[0]; ++e)
            for (int64_t k = 1; k <= 8; ++k)
                for (int tied = 0; tied <= 1; ++tied)
                    route_case(&rng, 1 + (int64_t)(e * 8 + (size_t)k) % 13, experts[e], k,
                               routing, tied);
    /* Enough tokens for the pool; the largest router; every expert picked. */
    route_case(&rng, 600, 128, 8, PAGODA_MOE_SOFTMAX_TOPK_NORM, 0);
    route_case(&rng, 600, 128, 8, PAGODA_MOE_SOFTMAX_TOPK, 1);
    route_case(&rng, 9, 1024, 64, PAGODA_MOE_SOFTMAX_TOPK_NORM, 0);
    route_case(&rng, 9, 1024, 64, PAGODA_MOE_SOFTMAX_TOPK, 1);
    route_case(&rng, 3, 8, 8, PAGODA_MOE_SOFTMAX_TOPK, 0);
    route_case(&rng, 3, 1, 1, PAGODA_MOE_SOFTMAX_TOPK_NORM, 0);
}

/* Rows ops.h leaves to the limits of the softmax: a +inf logit takes the whole weight (shared
 * by equal ones), a row of −inf weighs its experts alike; −0 and +0 tie. */
static void test_route_limits(void **state) {
    (void)state;
    const float logits[4][4] = {{1.0f, INFINITY, 2.0f, INFINITY},
                                {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                                {-0.0f, 0.0f, -1.0f, -0.0f},
                                {3.0f, -INFINITY, -INFINITY, -INFINITY}};
    int32_t ids[4 * 3];
    float weights[4 * 3];
    for (int32_t routing = 0; routing <= 1; ++routing) {
        const pagoda_op_moe_route_t a =
            route_args(4, 4, 3, routing, &logits[0][0], ids, weights);
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MOE_ROUTE, &a));
        check_rows(&logits[0][0], 4, 4, 3, routing, ids, weights);
        assert_int_equal(ids[0], 1);
        assert_int_equal(ids[1], 3);
        assert_true(weights[0] == 0.5f && weights[1] == 0.5f && weights[2] == 0.0f);
        assert_true(weights[3] == (routing ? 1.0f / 3 : 0.25f));
        assert_int_equal(ids[6], 0);
        assert_int_equal(ids[7], 1);
        assert_int_equal(ids[8], 3);
        assert_true(weights[9] == 1.0f && weights[10] == 0.0f);
    }
}

/* A NaN logit is an error naming it (the first in memory order); nothing is written. Pointers
 * are looked at only by the launch. */
static void test_route_refused(void **state) {
    (void)state;
    float logits[3 * 8];
    for (int i = 0; i < 3 * 8; ++i) logits[i] = (float)(i % 5);
    logits[2 * 8 + 5] = NAN;
    logits[2 * 8 + 6] = NAN;
    int32_t ids[3 * 2];
    float weights[3 * 2];
    for (int i = 0; i < 6; ++i) {
        ids[i] = SENTINEL_ID;
        weights[i] = SENTINEL_WEIGHT;
    }
    pagoda_op_moe_route_t a =
        route_args(3, 8, 2, PAGODA_MOE_SOFTMAX_TOPK_NORM, logits, ids, weights);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MOE_ROUTE, &a));
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_ROUTE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_route: logits[2, 5] is NaN");
    for (int i = 0; i < 6; ++i) assert_true(ids[i] == SENTINEL_ID && weights[i] == SENTINEL_WEIGHT);

    a.logits = NULL;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MOE_ROUTE, &a));
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_ROUTE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_route: logits is NULL");
    a.logits = logits;
    a.weights = NULL;
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_ROUTE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_route: weights is NULL");
    a.top_k = 9;
    test_cpu_expect_rejected(PAGODA_OP_MOE_ROUTE, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "moe_route: top_k = 9 is more than n_experts = 8");
    a.top_k = 2;
    a.routing = 5;
    test_cpu_expect_rejected(PAGODA_OP_MOE_ROUTE, &a, PAGODA_ERR_UNSUPPORTED,
                             "moe_route: routing = 5 is not a routing this backend knows");
    assert_string_equal(pagoda_op_name(PAGODA_OP_MOE_ROUTE), "moe_route");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_route_limits),
        cmocka_unit_test(test_route_refused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
