/* PAGODA_OP_SAMPLE on the CPU backend. The draw is checked against the exact filtered
 * distribution (sample_oracle.c, plain double arithmetic): sweeping `uniform` over a fine grid
 * must hand each surviving token exactly the interval [lo, hi) of its probability mass, in walk
 * order, and nothing to the tokens the filters drop. Also greedy ties, top-k = 1, top-p and
 * min-p edge cases, -inf and +inf logits, per-row parameters in one launch, and every error
 * ops.h names (a bad row leaves `out` unchanged). bf16/f16 logits (logits_dtype) must draw
 * exactly as their f32 values do. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_oracle.h"
#include "test_util.h"

/* A launch's per-row arrays, all host memory on the CPU backend. */
typedef struct rows {
    int64_t n, cols, ld;
    float *logits;
    float *temperature, *top_p, *min_p, *uniform;
    int32_t *top_k, *out;
    float *logprobs; /* NULL unless a test asks for them */
} rows_t;

static void rows_alloc(rows_t *r, int64_t n, int64_t cols, int64_t ld) {
    r->n = n;
    r->cols = cols;
    r->ld = ld;
    r->logits = test_xcalloc((size_t)(n * ld), sizeof(float));
    r->temperature = test_xmalloc((size_t)n * sizeof(float));
    r->top_p = test_xmalloc((size_t)n * sizeof(float));
    r->min_p = test_xmalloc((size_t)n * sizeof(float));
    r->uniform = test_xmalloc((size_t)n * sizeof(float));
    r->top_k = test_xmalloc((size_t)n * sizeof(int32_t));
    r->out = test_xmalloc((size_t)n * sizeof(int32_t));
    r->logprobs = NULL;
    for (int64_t i = 0; i < n; ++i) {
        r->temperature[i] = 1.0f;
        r->top_p[i] = 1.0f;
        r->min_p[i] = 0.0f;
        r->uniform[i] = 0.5f;
        r->top_k[i] = 0;
        r->out[i] = -77;
    }
}

static void rows_free(rows_t *r) {
    free(r->logits);
    free(r->temperature);
    free(r->top_p);
    free(r->min_p);
    free(r->uniform);
    free(r->top_k);
    free(r->out);
    free(r->logprobs);
}

/* log_softmax(x)[token] in long double, the reference for the op's `logprobs`. */
static double raw_logprob(const float *x, int64_t cols, int32_t token) {
    long double max = -INFINITY, sum = 0.0L;
    for (int64_t i = 0; i < cols; ++i)
        if (x[i] > max) max = x[i];
    for (int64_t i = 0; i < cols; ++i) sum += expl((long double)x[i] - max);
    return (double)((long double)x[token] - max - logl(sum));
}

static pagoda_op_sample_t rows_op(const rows_t *r) {
    pagoda_op_sample_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = r->n;
    a.cols = r->cols;
    a.logits = r->logits;
    a.ldx = r->ld == r->cols ? 0 : r->ld;
    a.temperature = r->temperature;
    a.top_k = r->top_k;
    a.top_p = r->top_p;
    a.min_p = r->min_p;
    a.uniform = r->uniform;
    a.out = r->out;
    a.logprobs = r->logprobs;
    return a;
}

static pagoda_status_t rows_launch(const rows_t *r) {
    pagoda_op_sample_t a = rows_op(r);
    return test_cpu_launch(PAGODA_OP_SAMPLE, &a);
}

static float *row_of(const rows_t *r, int64_t i) { return r->logits + i * r->ld; }

static void oracle_of(const rows_t *r, int64_t i, sample_oracle_t *o) {
    if (!sample_oracle_row(row_of(r, i), r->cols, r->temperature[i], r->top_k[i], r->top_p[i],
                           r->min_p[i], o))
        fail_msg("the oracle calls row %lld invalid", (long long)i);
}

/* ------------------------------------------------------------------------------------------ */

/* T = 0: the lowest id among equal maxima, whatever the other parameters say. */
static void test_greedy_ties(void **state) {
    (void)state;
    rows_t r;
    rows_alloc(&r, 4, 9, 11);
    const float row0[9] = {1, 5, 2, 5, 5, -1, 0, 3, 5};
    const float row1[9] = {-INFINITY, -INFINITY, -3, -INFINITY, -3, -4, -INFINITY, -9, -3};
    const float row2[9] = {7, 7, 7, 7, 7, 7, 7, 7, 7};
    const float row3[9] = {0, 0, 0, 0, 0, 0, 0, 0, 2};
    memcpy(row_of(&r, 0), row0, sizeof row0);
    memcpy(row_of(&r, 1), row1, sizeof row1);
    memcpy(row_of(&r, 2), row2, sizeof row2);
    memcpy(row_of(&r, 3), row3, sizeof row3);
    for (int64_t i = 0; i < r.n; ++i) {
        r.temperature[i] = 0.0f;
        r.uniform[i] = 0.99f;
        r.top_k[i] = 3;
        r.top_p[i] = 0.1f;
        r.min_p[i] = 0.9f;
    }
    TEST_ASSERT_OK(rows_launch(&r));
    assert_int_equal(r.out[0], 1);
    assert_int_equal(r.out[1], 2);
    assert_int_equal(r.out[2], 0);
    assert_int_equal(r.out[3], 8);
    rows_free(&r);
}

/* T > 0 with top_k = 1 (or top_p so small only the best survives) is the argmax, ties to the
 * lower id, for every uniform. */
static void test_single_survivor_is_argmax(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 91);
    const int64_t n = 64, cols = 1000;
    rows_t r;
    rows_alloc(&r, n, cols, cols);
    int32_t *want = test_xmalloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; ++i) {
        float *x = row_of(&r, i);
        test_fill_uniform(&rng, x, (size_t)cols, -4.0f, 4.0f);
        if (i % 2 == 0) /* a tie at the top */
            x[test_rng_int(&rng, 0, cols - 1)] = x[test_rng_int(&rng, 0, cols - 1)] = 6.0f;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; ++j)
            if (x[j] > x[best]) best = j;
        want[i] = (int32_t)best;
        r.temperature[i] = test_rng_uniform(&rng, 0.1f, 3.0f);
        r.uniform[i] = (float)i / (float)n;
        if (i % 2 == 0)
            r.top_k[i] = 1;
        else
            r.top_p[i] = 1e-6f; /* the best token alone reaches it */
    }
    TEST_ASSERT_OK(rows_launch(&r));
    for (int64_t i = 0; i < n; ++i)
        if (r.out[i] != want[i])
            fail_msg("row %lld (top_k %d, top_p %g): got %d, want the argmax %d", (long long)i,
                     r.top_k[i], (double)r.top_p[i], r.out[i], want[i]);
    free(want);
    rows_free(&r);
}

/* The sweep: one launch of `n` copies of `logits` with uniform = (j + 0.5) / n. Each token must
 * be picked on exactly the u inside its interval [lo, hi) / total (checked point by point, so
 * the intervals' order is checked too) and its share of the grid must be its probability. */
static void sweep(const float *logits, int64_t cols, float temperature, int32_t top_k,
                  float top_p, float min_p, const char *what) {
    const int64_t n = 20000;
    rows_t r;
    rows_alloc(&r, n, cols, cols);
    for (int64_t j = 0; j < n; ++j) {
        memcpy(row_of(&r, j), logits, (size_t)cols * sizeof(float));
        r.temperature[j] = temperature;
        r.top_k[j] = top_k;
        r.top_p[j] = top_p;
        r.min_p[j] = min_p;
        r.uniform[j] = (float)(((double)j + 0.5) / (double)n);
    }
    TEST_ASSERT_OK(rows_launch(&r));
    sample_oracle_t o;
    oracle_of(&r, 0, &o);
    int64_t *count = test_xcalloc((size_t)cols, sizeof *count);
    for (int64_t j = 0; j < n; ++j) {
        const int32_t got = r.out[j];
        if (got < 0 || got >= cols)
            fail_msg("%s: u[%lld]: token %d out of range", what, (long long)j, got);
        const int64_t pos = sample_oracle_position(&o, got);
        if (pos < 0)
            fail_msg("%s: u = %.6f picked token %d, which the filters drop", what,
                     (double)r.uniform[j], got);
        const double target = (double)r.uniform[j] * o.total;
        if (!(target >= o.lo[pos] && (target < o.hi[pos] || pos == o.n - 1)))
            fail_msg("%s: u = %.6f (target %.9g of %.9g) picked token %d, whose interval is "
                     "[%.9g, %.9g)", what, (double)r.uniform[j], target, o.total, got, o.lo[pos],
                     o.hi[pos]);
        count[got]++;
    }
    for (int64_t i = 0; i < o.n; ++i) {
        const double p = (o.hi[i] - o.lo[i]) / o.total;
        const double share = (double)count[o.tokens[i]] / (double)n;
        if (fabs(share - p) > 1.0 / (double)n + 1e-12)
            fail_msg("%s: token %d drawn on %.6f of the grid, probability %.6f", what,
                     o.tokens[i], share, p);
    }
    /* Survivors of any weight were hit, so the grid covered every interval. */
    int64_t hit = 0;
    for (int64_t t = 0; t < cols; ++t) hit += count[t] > 0;
    if (hit < 2 && o.n >= 2 && (o.hi[0] - o.lo[0]) < 0.99 * o.total)
        fail_msg("%s: only %lld tokens drawn", what, (long long)hit);
    free(count);
    sample_oracle_free(&o);
    rows_free(&r);
}

static void test_uniform_sweep_matches_distribution(void **state) {
    (void)state;
    /* Ties (ids 2, 5, 9 share 1.5), a -inf, and a spread of weights. */
    const float logits[12] = {0.3f, -1.0f, 1.5f, 2.25f, -INFINITY, 1.5f,
                              0.0f, -2.5f, 0.9f, 1.5f, -0.7f, 2.0f};
    sweep(logits, 12, 1.0f, 0, 1.0f, 0.0f, "plain");
    sweep(logits, 12, 0.6f, 0, 1.0f, 0.0f, "T=0.6");
    sweep(logits, 12, 2.5f, 0, 1.0f, 0.0f, "T=2.5");
    sweep(logits, 12, 1.0f, 4, 1.0f, 0.0f, "top_k=4 (ties cut by id)");
    sweep(logits, 12, 1.0f, 5, 1.0f, 0.0f, "top_k=5");
    sweep(logits, 12, 1.0f, 11, 1.0f, 0.0f, "top_k=11 (more than the finite tokens)");
    sweep(logits, 12, 1.0f, 12, 1.0f, 0.0f, "top_k=cols (off)");
    sweep(logits, 12, 1.0f, -1, 1.0f, 0.0f, "top_k=-1 (off)");
    sweep(logits, 12, 1.0f, 0, 0.7f, 0.0f, "top_p=0.7");
    sweep(logits, 12, 1.0f, 0, 0.5f, 0.0f, "top_p=0.5 (inside the tie)");
    sweep(logits, 12, 1.0f, 0, 1e-7f, 0.0f, "top_p tiny");
    sweep(logits, 12, 1.0f, 0, 1.0f, 0.3f, "min_p=0.3");
    sweep(logits, 12, 1.0f, 0, 1.0f, 1.0f, "min_p=1");
    sweep(logits, 12, 0.8f, 6, 0.9f, 0.1f, "top_k=6 top_p=0.9 min_p=0.1");
    sweep(logits, 12, 1.3f, 0, 0.8f, 0.2f, "top_p=0.8 min_p=0.2");
    /* Weights that underflow to 0 leave even with min_p = 0. */
    const float far[5] = {0.0f, -800.0f, 0.0f, -1.0f, -900.0f};
    sweep(far, 5, 1.0f, 0, 1.0f, 0.0f, "underflowing weights");
    sweep(far, 5, 1.0f, 4, 1.0f, 0.0f, "underflowing weights, top_k=4");
}

/* Many rows, each with its own random parameters, in one launch, against the oracle; among
 * them vocabulary-sized and strided rows. */
static void random_rows(test_rng_t *rng, int64_t n, int64_t cols, int64_t pad) {
    rows_t r;
    rows_alloc(&r, n, cols, cols + pad);
    for (int64_t i = 0; i < n * r.ld; ++i) r.logits[i] = NAN; /* padding is never read */
    for (int64_t i = 0; i < n; ++i) {
        float *x = row_of(&r, i);
        const float spread = test_rng_uniform(rng, 1.0f, 20.0f);
        test_fill_uniform(rng, x, (size_t)cols, -spread, spread);
        if (i % 3 == 0) /* some ties and dead tokens */
            for (int k = 0; k < 8; ++k) {
                x[test_rng_int(rng, 0, cols - 1)] = -INFINITY;
                x[test_rng_int(rng, 0, cols - 1)] = spread;
            }
        r.temperature[i] = i % 7 == 0 ? 0.0f : test_rng_uniform(rng, 0.05f, 2.0f);
        r.top_k[i] = i % 2 ? (int32_t)test_rng_int(rng, -1, cols + 1) : 0;
        r.top_p[i] = i % 3 ? test_rng_uniform(rng, 0.05f, 1.0f) : 1.0f;
        r.min_p[i] = i % 4 == 1 ? test_rng_uniform(rng, 0.0f, 0.5f) : 0.0f;
        r.uniform[i] = test_rng_uniform(rng, 0.0f, 1.0f);
    }
    r.logprobs = test_xmalloc((size_t)n * sizeof(float));
    TEST_ASSERT_OK(rows_launch(&r));
    for (int64_t i = 0; i < n; ++i) {
        const double want = raw_logprob(row_of(&r, i), cols, r.out[i]);
        if (!(fabs(r.logprobs[i] - want) <= 1e-6 * fmax(1.0, fabs(want))))
            fail_msg("cols %lld row %lld: logprob of token %d is %.9g, log_softmax says %.9g",
                     (long long)cols, (long long)i, r.out[i], (double)r.logprobs[i], want);
        sample_oracle_t o;
        oracle_of(&r, i, &o);
        if (!sample_oracle_accepts(&o, r.out[i], r.uniform[i], 1e-9))
            fail_msg("cols %lld row %lld (T %g top_k %d top_p %g min_p %g u %.7f): got %d, the "
                     "oracle picks %d", (long long)cols, (long long)i, (double)r.temperature[i],
                     r.top_k[i], (double)r.top_p[i], (double)r.min_p[i], (double)r.uniform[i],
                     r.out[i], sample_oracle_pick(&o, r.uniform[i]));
        sample_oracle_free(&o);
    }
    rows_free(&r);
}

static void test_random_rows_match_oracle(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 92);
    random_rows(&rng, 200, 7, 0);
    random_rows(&rng, 60, 1000, 3);
    random_rows(&rng, 6, 151936, 0);
    random_rows(&rng, 3, 32000, 5);
}

/* -inf tokens are never drawn, not even by u just below 1 (the walk's last survivor); a +inf
 * logit takes all the mass. */
static void test_infinities(void **state) {
    (void)state;
    rows_t r;
    rows_alloc(&r, 4, 5, 5);
    const float dead_tail[5] = {1.0f, 2.0f, 0.5f, -INFINITY, -INFINITY};
    const float pos_inf[5] = {1.0f, INFINITY, 50.0f, -INFINITY, INFINITY};
    memcpy(row_of(&r, 0), dead_tail, sizeof dead_tail);
    memcpy(row_of(&r, 1), dead_tail, sizeof dead_tail);
    memcpy(row_of(&r, 2), pos_inf, sizeof pos_inf);
    memcpy(row_of(&r, 3), pos_inf, sizeof pos_inf);
    r.uniform[0] = nextafterf(1.0f, 0.0f);
    r.uniform[1] = nextafterf(1.0f, 0.0f);
    r.top_k[1] = 4; /* rank order: the last survivor is token 2 */
    r.uniform[2] = 0.25f;
    r.uniform[3] = 0.75f;
    r.logprobs = test_xmalloc(4 * sizeof(float));
    TEST_ASSERT_OK(rows_launch(&r));
    assert_true(fabsf(r.logprobs[0] - (float)raw_logprob(dead_tail, 5, 2)) < 1e-6f);
    assert_true(isnan(r.logprobs[2])); /* a row holding +inf has no finite log-probabilities */
    assert_int_equal(r.out[0], 2); /* id order: the last live token */
    assert_int_equal(r.out[1], 2);
    assert_int_equal(r.out[2], 1); /* two +inf of weight 1 each: ids 1 and 4 */
    assert_int_equal(r.out[3], 4);
    rows_free(&r);
}

/* A bad row fails the launch naming the row (and field), and leaves every out[r] as it was. */
static void expect_row_error(rows_t *r, const char *needle) {
    for (int64_t i = 0; i < r->n; ++i) r->out[i] = -77;
    pagoda_clear_error();
    test_expect_failure(rows_launch(r), PAGODA_ERR_INVALID_ARGUMENT, needle);
    for (int64_t i = 0; i < r->n; ++i)
        if (r->out[i] != -77) fail_msg("a failed launch (%s) wrote out[%lld]", needle, (long long)i);
}

static void test_row_errors(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 93);
    rows_t r;
    rows_alloc(&r, 5, 300, 300);
    test_fill_uniform(&rng, r.logits, (size_t)(r.n * r.ld), -3.0f, 3.0f);
    TEST_ASSERT_OK(rows_launch(&r));

    for (int64_t j = 0; j < r.cols; ++j) row_of(&r, 3)[j] = -INFINITY;
    expect_row_error(&r, "logits row 3 is -inf everywhere");
    r.temperature[3] = 0.0f; /* greedy rows too: there is nothing to pick */
    expect_row_error(&r, "logits row 3 is -inf everywhere");
    r.temperature[3] = 1.0f;
    test_fill_uniform(&rng, row_of(&r, 3), (size_t)r.cols, -3.0f, 3.0f);
    TEST_ASSERT_OK(rows_launch(&r));

    row_of(&r, 4)[123] = NAN;
    row_of(&r, 2)[200] = NAN; /* the lower row is the one named */
    expect_row_error(&r, "logits row 2 has a NaN at column 200");
    row_of(&r, 2)[200] = 0.0f;
    expect_row_error(&r, "logits row 4 has a NaN at column 123");
    row_of(&r, 4)[123] = 0.0f;

    static const struct {
        int field; /* 0 temperature, 1 top_p, 2 min_p, 3 uniform */
        float value;
        const char *needle;
    } bad[] = {
        {0, -0.5f, "temperature[1] = -0.5"}, {0, INFINITY, "temperature[1] = inf"},
        {0, NAN, "temperature[1] = nan"},    {1, 0.0f, "top_p[1] = 0 must be in (0, 1]"},
        {1, 1.5f, "top_p[1] = 1.5"},         {1, NAN, "top_p[1] = nan"},
        {2, -0.1f, "min_p[1] = -0.1"},       {2, 1.01f, "min_p[1] = 1.01"},
        {3, 1.0f, "uniform[1] = 1 must be in [0, 1)"},
        {3, -0.25f, "uniform[1] = -0.25"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        float *field = bad[k].field == 0   ? r.temperature
                       : bad[k].field == 1 ? r.top_p
                       : bad[k].field == 2 ? r.min_p
                                           : r.uniform;
        const float saved = field[1];
        field[1] = bad[k].value;
        expect_row_error(&r, bad[k].needle);
        field[1] = saved;
    }
    TEST_ASSERT_OK(rows_launch(&r));
    rows_free(&r);
}

/* The shared descriptor checks, and NULL pointers at launch. */
/* bf16/f16 logits widen exactly, so every row must pick the token, and report the
 * log-probability, that the same values give as f32; NaN and all -inf rows fail alike. */
static void half_rows(test_rng_t *rng, pagoda_dtype_t dtype, int64_t n, int64_t cols, int64_t pad) {
    rows_t r;
    rows_alloc(&r, n, cols, cols + pad);
    for (int64_t i = 0; i < n * r.ld; ++i) r.logits[i] = NAN; /* padding is never read */
    for (int64_t i = 0; i < n; ++i) {
        float *x = row_of(&r, i);
        const float spread = test_rng_uniform(rng, 1.0f, 20.0f);
        test_fill_uniform(rng, x, (size_t)cols, -spread, spread);
        if (i % 3 == 0)
            for (int k = 0; k < 4; ++k) x[test_rng_int(rng, 0, cols - 1)] = -INFINITY;
        r.temperature[i] = i % 5 == 0 ? 0.0f : test_rng_uniform(rng, 0.05f, 2.0f);
        r.top_k[i] = i % 2 ? (int32_t)test_rng_int(rng, -1, cols + 1) : 0;
        r.top_p[i] = i % 3 ? test_rng_uniform(rng, 0.05f, 1.0f) : 1.0f;
        r.min_p[i] = i % 4 == 1 ? test_rng_uniform(rng, 0.0f, 0.5f) : 0.0f;
        r.uniform[i] = test_rng_uniform(rng, 0.0f, 1.0f);
    }
    /* The f32 logits become the half values' own, so both launches see the same numbers. */
    uint16_t *half = test_xmalloc((size_t)(n * r.ld) * sizeof(uint16_t));
    double *kept = test_xmalloc((size_t)(n * r.ld) * sizeof(double));
    test_convert_weights(dtype, r.logits, (size_t)(n * r.ld), half, kept);
    for (int64_t i = 0; i < n * r.ld; ++i) r.logits[i] = (float)kept[i];
    r.logprobs = test_xmalloc((size_t)n * sizeof(float));
    TEST_ASSERT_OK(rows_launch(&r));
    int32_t *want = test_xmalloc((size_t)n * sizeof(int32_t));
    float *want_logprobs = test_xmalloc((size_t)n * sizeof(float));
    memcpy(want, r.out, (size_t)n * sizeof(int32_t));
    memcpy(want_logprobs, r.logprobs, (size_t)n * sizeof(float));

    pagoda_op_sample_t a = rows_op(&r);
    a.logits = half;
    a.logits_dtype = dtype;
    for (int64_t i = 0; i < n; ++i) r.out[i] = -77;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SAMPLE, &a));
    for (int64_t i = 0; i < n; ++i)
        if (r.out[i] != want[i] || memcmp(&r.logprobs[i], &want_logprobs[i], sizeof(float)) != 0)
            fail_msg("%s logits, cols %lld row %lld: token %d logprob %.9g, as f32 %d %.9g",
                     pagoda_dtype_name(dtype), (long long)cols, (long long)i, r.out[i],
                     (double)r.logprobs[i], want[i], (double)want_logprobs[i]);

    /* A NaN in row 1 (bf16 0x7FC0, f16 0x7E00) fails the launch naming its row and column. */
    half[1 * r.ld + 2] = dtype == PAGODA_DTYPE_BF16 ? 0x7FC0u : 0x7E00u;
    pagoda_clear_error();
    test_expect_failure(test_cpu_launch(PAGODA_OP_SAMPLE, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "row 1");
    free(half);
    free(kept);
    free(want);
    free(want_logprobs);
    rows_free(&r);
}

static void test_half_logits(void **state) {
    (void)state;
    test_rng_t rng;
    test_rng_seed(&rng, 95);
    static const pagoda_dtype_t types[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (size_t t = 0; t < 2; ++t) {
        half_rows(&rng, types[t], 40, 7, 1);
        half_rows(&rng, types[t], 20, 1000, 0);
        half_rows(&rng, types[t], 3, 151936, 5);
    }
}

static void test_descriptor_checks(void **state) {
    (void)state;
    rows_t r;
    rows_alloc(&r, 2, 8, 8);
    pagoda_op_sample_t a = rows_op(&r);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SAMPLE, &a));
    a.rows = 0;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "sample: rows = 0");
    a.rows = 2;
    a.cols = 0;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "sample: cols = 0");
    a.cols = (int64_t)INT32_MAX + 1;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT, "int32");
    a.cols = 8;
    a.ldx = 7;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT, "ldx = 7");
    a.ldx = 0;
    a.struct_size = 8;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT, "struct_size");
    /* An ABI 1.0 caller's struct ends before logits_dtype, which then reads as f32. */
    a.struct_size = (uint32_t)offsetof(pagoda_op_sample_t, logits_dtype);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SAMPLE, &a));
    a.struct_size = sizeof a;
    a.logits_dtype = PAGODA_DTYPE_I32;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_UNSUPPORTED,
                             "sample: logits_dtype = i32");
    a.logits_dtype = (pagoda_dtype_t)50;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_UNSUPPORTED, "unknown (50)");
    /* the extent counts bf16's two bytes: 2^61 + 1 elements fit as bf16, not as f32 */
    a.logits_dtype = PAGODA_DTYPE_BF16;
    a.ldx = (int64_t)1 << 61;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SAMPLE, &a));
    a.logits_dtype = PAGODA_DTYPE_F32;
    test_cpu_expect_rejected(PAGODA_OP_SAMPLE, &a, PAGODA_ERR_INVALID_ARGUMENT, "address space");
    a.logits_dtype = PAGODA_DTYPE_INVALID;
    a.ldx = 0;

    /* Descriptors are judged without their pointers; a launch needs every one. */
    pagoda_op_sample_t no_pointers = a;
    no_pointers.logits = NULL;
    no_pointers.out = NULL;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SAMPLE, &no_pointers));
    static const char *const names[] = {"logits", "temperature", "top_k", "top_p",
                                        "min_p",  "uniform",     "out"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        pagoda_op_sample_t b = a;
        switch (k) {
            case 0: b.logits = NULL; break;
            case 1: b.temperature = NULL; break;
            case 2: b.top_k = NULL; break;
            case 3: b.top_p = NULL; break;
            case 4: b.min_p = NULL; break;
            case 5: b.uniform = NULL; break;
            default: b.out = NULL; break;
        }
        char needle[64];
        snprintf(needle, sizeof needle, "sample: %s is NULL", names[k]);
        pagoda_clear_error();
        test_expect_failure(test_cpu_launch(PAGODA_OP_SAMPLE, &b), PAGODA_ERR_INVALID_ARGUMENT,
                            needle);
    }
    rows_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_ties),
        cmocka_unit_test(test_single_survivor_is_argmax),
        cmocka_unit_test(test_uniform_sweep_matches_distribution),
        cmocka_unit_test(test_random_rows_match_oracle),
        cmocka_unit_test(test_infinities),
        cmocka_unit_test(test_row_errors),
        cmocka_unit_test(test_half_logits),
        cmocka_unit_test(test_descriptor_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
