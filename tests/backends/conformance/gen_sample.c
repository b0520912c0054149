/* SAMPLE cases: random logit rows of vocabulary sizes around and between block sizes (up to
 * ~150k), padded strides, ties and -inf tokens, and per-row parameters drawn at random (greedy
 * rows among them). Backends may differ in rounding, so a draw is compared by rule rather than
 * by equality: a greedy row must give the reference's token; a sampled row may give any token
 * the exact oracle (sample_oracle.c) says survives the filters and whose CDF interval holds
 * uniform · total within kSampleTolerance of the total. The reference's own draw must pass the
 * same rule, so the oracle and the reference cannot drift apart unnoticed. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "sample_oracle.h"

/* A running sum in f32 or in another order moves the target by far less than this. */
static const double kSampleTolerance = 1e-5;

/* What compare_sample reads: the case's host inputs (owned by the case's tensors). */
typedef struct sample_check {
    conf_custom_t custom; /* first, so the conf_custom_t the harness holds is the whole check */
    int64_t rows, cols, ldx;
    const float *logits, *temperature, *top_p, *min_p, *uniform;
    const int32_t *top_k;
} sample_check_t;

static int oracle_row(const sample_check_t *s, int64_t r, sample_oracle_t *o) {
    return sample_oracle_row(s->logits + r * s->ldx, s->cols, s->temperature[r], s->top_k[r],
                             s->top_p[r], s->min_p[r], o);
}

/* Whether `token` is a right answer for row r; `why` says what it is not. */
static int token_ok(const sample_check_t *s, const sample_oracle_t *o, int64_t r, int32_t token,
                    int32_t ref_token, char *why, size_t why_size) {
    if (token < 0 || token >= s->cols) {
        snprintf(why, why_size, "out[%lld] = %d is outside [0, %lld)", (long long)r, (int)token,
                 (long long)s->cols);
        return 0;
    }
    if (o->greedy) {
        if (token == ref_token && token == o->tokens[0]) return 1;
        snprintf(why, why_size, "out[%lld] = %d in a greedy row, the reference's %d (argmax %d)",
                 (long long)r, (int)token, (int)ref_token, (int)o->tokens[0]);
        return 0;
    }
    if (sample_oracle_accepts(o, token, s->uniform[r], kSampleTolerance)) return 1;
    const int64_t pos = sample_oracle_position(o, token);
    const double target = (double)s->uniform[r] * o->total;
    if (pos < 0)
        snprintf(why, why_size,
                 "out[%lld] = %d (T %g top_k %d top_p %g min_p %g) does not survive the filters "
                 "(%lld survivors; the draw is %d)",
                 (long long)r, (int)token, (double)s->temperature[r], (int)s->top_k[r],
                 (double)s->top_p[r], (double)s->min_p[r], (long long)o->n,
                 (int)sample_oracle_pick(o, s->uniform[r]));
    else
        snprintf(why, why_size,
                 "out[%lld] = %d covers [%.9g, %.9g) of %.9g, but uniform %.9g puts the target at "
                 "%.9g (the draw is %d)",
                 (long long)r, (int)token, o->lo[pos], o->hi[pos], o->total,
                 (double)s->uniform[r], target, (int)sample_oracle_pick(o, s->uniform[r]));
    return 0;
}

static int compare_sample(const conf_custom_t *self, const struct conf_tensor *t, const void *ref,
                          const void *got, char *why, size_t why_size) {
    const sample_check_t *s = (const sample_check_t *)self;
    const int32_t *ref_out = ref, *got_out = got;
    for (int64_t r = 0; r < s->rows; ++r) {
        sample_oracle_t o;
        if (!oracle_row(s, r, &o)) {
            snprintf(why, why_size, "%s: row %lld is invalid, yet the reference ran it", t->name,
                     (long long)r);
            return 0;
        }
        char detail[400];
        int ok = token_ok(s, &o, r, ref_out[r], ref_out[r], detail, sizeof detail);
        if (!ok)
            snprintf(why, why_size, "%s: the reference itself disagrees with the oracle: %s",
                     t->name, detail);
        else if (!(ok = token_ok(s, &o, r, got_out[r], ref_out[r], detail, sizeof detail)))
            snprintf(why, why_size, "%s: %s", t->name, detail);
        sample_oracle_free(&o);
        if (!ok) return 0;
    }
    return 1;
}

/* Replaces the middle row's token with an in-range one that the rule rejects: another token of
 * a greedy row; else the survivor farthest from the target (proof that the interval is
 * checked), or failing that a token the filters drop. */
static int perturb_sample(const conf_custom_t *self, const struct conf_tensor *t, const void *ref,
                          void *got) {
    (void)t;
    const sample_check_t *s = (const sample_check_t *)self;
    const int64_t r = s->rows / 2;
    int32_t *out = got;
    const int32_t ref_token = ((const int32_t *)ref)[r];
    sample_oracle_t o;
    if (!oracle_row(s, r, &o)) return 0;
    int32_t wrong = -1;
    if (o.greedy) {
        if (s->cols > 1) wrong = (int32_t)((ref_token + 1) % s->cols);
    } else {
        const int32_t ends[2] = {o.tokens[0], o.tokens[o.n - 1]};
        for (int k = 0; k < 2 && wrong < 0; ++k)
            if (!sample_oracle_accepts(&o, ends[k], s->uniform[r], kSampleTolerance))
                wrong = ends[k];
        for (int64_t c = 0; c < s->cols && wrong < 0; ++c)
            if (sample_oracle_position(&o, (int32_t)c) < 0) wrong = (int32_t)c;
    }
    sample_oracle_free(&o);
    out[r] = wrong; /* -1 (out of range) only for a row with a single possible token */
    return 1;
}

/* Fills row r with `cols` random logits and some of the patterns a sampler meets. */
static void fill_row(test_rng_t *rng, float *x, int64_t cols, int pattern) {
    const float spread = test_rng_uniform(rng, 2.0f, 16.0f);
    test_fill_uniform(rng, x, (size_t)cols, -spread, spread);
    switch (pattern) {
        case 1: /* ties at the top */
            for (int k = 0; k < 6; ++k) x[test_rng_int(rng, 0, cols - 1)] = spread + 1.0f;
            break;
        case 2: /* dead tokens (a masked vocabulary) */
            for (int64_t i = 0; i < cols; ++i)
                if (test_rng_int(rng, 0, 3) == 0) x[i] = -INFINITY;
            break;
        case 3: /* a peaked distribution: one token takes nearly everything */
            x[test_rng_int(rng, 0, cols - 1)] = 40.0f;
            break;
        case 4: /* coarse values: many exact ties everywhere */
            for (int64_t i = 0; i < cols; ++i) x[i] = floorf(x[i]);
            break;
        default: break;
    }
}

/* Random per-row parameters: each filter on in some rows, off (in each of its spellings) in
 * others; a few greedy rows. */
static void draw_params(test_rng_t *rng, int64_t cols, float *temperature, int32_t *top_k,
                        float *top_p, float *min_p, float *uniform) {
    *temperature = test_rng_int(rng, 0, 6) == 0 ? 0.0f : test_rng_uniform(rng, 0.1f, 2.5f);
    switch (test_rng_int(rng, 0, 5)) {
        case 0: *top_k = (int32_t)test_rng_int(rng, 1, cols < 64 ? cols : 64); break;
        case 1: *top_k = (int32_t)test_rng_int(rng, 1, cols); break;
        case 2: *top_k = -1; break;
        case 3: *top_k = (int32_t)cols; break;
        default: *top_k = 0; break;
    }
    *top_p = test_rng_int(rng, 0, 2) == 0 ? 1.0f : test_rng_uniform(rng, 0.01f, 1.0f);
    *min_p = test_rng_int(rng, 0, 2) == 0 ? test_rng_uniform(rng, 0.0f, 0.3f) : 0.0f;
    *uniform = test_rng_uniform(rng, 0.0f, 1.0f);
}

/* The per-row arrays of one case, before they are handed to it. */
typedef struct sample_inputs {
    float *logits, *temperature, *top_p, *min_p, *uniform;
    int32_t *top_k;
} sample_inputs_t;

static void sample_inputs_make(test_rng_t *rng, int64_t rows, int64_t cols, int64_t ldx,
                               sample_inputs_t *in) {
    in->logits = conf_random_f32(rng, (size_t)(rows * ldx), -1.0f, 1.0f); /* padding too */
    in->temperature = test_xmalloc((size_t)rows * sizeof(float));
    in->top_p = test_xmalloc((size_t)rows * sizeof(float));
    in->min_p = test_xmalloc((size_t)rows * sizeof(float));
    in->uniform = test_xmalloc((size_t)rows * sizeof(float));
    in->top_k = test_xmalloc((size_t)rows * sizeof(int32_t));
    for (int64_t r = 0; r < rows; ++r) {
        fill_row(rng, in->logits + r * ldx, cols, (int)(r % 5));
        draw_params(rng, cols, &in->temperature[r], &in->top_k[r], &in->top_p[r],
                    &in->min_p[r], &in->uniform[r]);
    }
}

/* Hands `in` to a SAMPLE case and runs it; `expect` is the status the reference must give.
 * With bf16/f16 `logits_dtype` the logits are rounded to it, and the oracle reads the values
 * kept. */
static void sample_case(const char *why_label, int64_t rows, int64_t cols, int64_t ldx,
                        pagoda_dtype_t logits_dtype, sample_inputs_t *in, pagoda_status_t expect,
                        conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "sample %s rows=%lld cols=%lld ldx=%lld logits=%s", why_label,
                   (long long)rows, (long long)cols, (long long)ldx,
                   pagoda_dtype_name(logits_dtype));
    c.expect = expect;
    pagoda_op_sample_t *a = &conf_add_step(&c, PAGODA_OP_SAMPLE)->sample;
    a->rows = rows;
    a->cols = cols;
    a->ldx = ldx == cols ? 0 : ldx;
    a->logits_dtype = logits_dtype;
    const size_t fr = (size_t)rows * sizeof(float);
    const size_t n_logits = (size_t)(rows * ldx);
    void *uploaded = in->logits;
    if (logits_dtype != PAGODA_DTYPE_F32) {
        double *kept = test_xmalloc(n_logits * sizeof(double));
        uploaded = test_xmalloc(n_logits * pagoda_dtype_size(logits_dtype));
        test_convert_weights(logits_dtype, in->logits, n_logits, uploaded, kept);
        for (size_t i = 0; i < n_logits; ++i) in->logits[i] = (float)kept[i];
        free(kept);
        conf_own(&c, in->logits);
    }
    const int tx = conf_add_tensor(&c, "logits", uploaded,
                                   n_logits * pagoda_dtype_size(logits_dtype), CONF_DEVICE,
                                   CONF_INPUT, 0);
    const int tt = conf_add_tensor(&c, "temperature", in->temperature, fr, CONF_DEVICE,
                                   CONF_INPUT, 0);
    const int tk = conf_add_tensor(&c, "top_k", in->top_k, (size_t)rows * sizeof(int32_t),
                                   CONF_DEVICE, CONF_INPUT, 0);
    const int tp = conf_add_tensor(&c, "top_p", in->top_p, fr, CONF_DEVICE, CONF_INPUT, 0);
    const int tm = conf_add_tensor(&c, "min_p", in->min_p, fr, CONF_DEVICE, CONF_INPUT, 0);
    const int tu = conf_add_tensor(&c, "uniform", in->uniform, fr, CONF_DEVICE, CONF_INPUT, 0);
    int32_t *init = test_xmalloc((size_t)rows * sizeof *init);
    for (int64_t r = 0; r < rows; ++r) init[r] = -7;
    const int to = conf_add_tensor(&c, "out", init, (size_t)rows * sizeof *init, CONF_DEVICE,
                                   CONF_CUSTOM, kSampleTolerance);

    sample_check_t *check = conf_own(&c, test_xcalloc(1, sizeof *check));
    check->custom.compare = compare_sample;
    check->custom.perturb = perturb_sample;
    check->custom.context = check;
    check->rows = rows;
    check->cols = cols;
    check->ldx = ldx;
    check->logits = in->logits;
    check->temperature = in->temperature;
    check->top_k = in->top_k;
    check->top_p = in->top_p;
    check->min_p = in->min_p;
    check->uniform = in->uniform;
    c.tensors[to].custom = &check->custom;

    conf_bind(&c, 0, tx, offsetof(pagoda_op_sample_t, logits));
    conf_bind(&c, 0, tt, offsetof(pagoda_op_sample_t, temperature));
    conf_bind(&c, 0, tk, offsetof(pagoda_op_sample_t, top_k));
    conf_bind(&c, 0, tp, offsetof(pagoda_op_sample_t, top_p));
    conf_bind(&c, 0, tm, offsetof(pagoda_op_sample_t, min_p));
    conf_bind(&c, 0, tu, offsetof(pagoda_op_sample_t, uniform));
    conf_bind(&c, 0, to, offsetof(pagoda_op_sample_t, out));
    if (expect == PAGODA_OK) {
        /* The chosen tokens' raw log-probabilities. A backend may pick another token only where
         * the draw sits within kSampleTolerance of a CDF boundary, which these seeds avoid; a
         * flip would show here as a log-probability mismatch naming the case. */
        float *lp = test_xmalloc(fr);
        for (int64_t r = 0; r < rows; ++r) lp[r] = -7.0f;
        const int tl = conf_add_tensor(&c, "logprobs", lp, fr, CONF_DEVICE, CONF_F32, 1e-5);
        conf_bind(&c, 0, tl, offsetof(pagoda_op_sample_t, logprobs));
    }
    conf_check_case(&c, tally);
}

static void random_case(test_rng_t *rng, int64_t rows, int64_t cols, int padded,
                        conf_tally_t *tally) {
    const int64_t ldx = padded ? cols + test_rng_int(rng, 1, 7) : cols;
    sample_inputs_t in;
    sample_inputs_make(rng, rows, cols, ldx, &in);
    sample_case("random", rows, cols, ldx, PAGODA_DTYPE_F32, &in, PAGODA_OK, tally);
}

static void half_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                      int padded, conf_tally_t *tally) {
    const int64_t ldx = padded ? cols + test_rng_int(rng, 1, 7) : cols;
    sample_inputs_t in;
    sample_inputs_make(rng, rows, cols, ldx, &in);
    sample_case("random", rows, cols, ldx, dtype, &in, PAGODA_OK, tally);
}

/* One bad row among good ones: every backend must fail the launch (the CUDA backend when its
 * stream synchronizes). `kind`: 0 NaN logit, 1 all -inf, 2 uniform = 1, 3 top_p = 0,
 * 4 temperature < 0, 5 min_p > 1. */
static void error_case(test_rng_t *rng, int kind, pagoda_dtype_t dtype, conf_tally_t *tally) {
    static const char *const labels[] = {"nan logit", "all -inf", "uniform=1",
                                         "top_p=0",   "T<0",      "min_p>1"};
    const int64_t rows = 4, cols = 3000, bad = 2;
    sample_inputs_t in;
    sample_inputs_make(rng, rows, cols, cols, &in);
    float *x = in.logits + bad * cols;
    switch (kind) {
        case 0: x[1234] = NAN; break;
        case 1:
            for (int64_t i = 0; i < cols; ++i) x[i] = -INFINITY;
            break;
        case 2: in.uniform[bad] = 1.0f; break;
        case 3: in.top_p[bad] = 0.0f; break;
        case 4: in.temperature[bad] = -1.0f; break;
        default: in.min_p[bad] = 1.5f; break;
    }
    sample_case(labels[kind], rows, cols, cols, dtype, &in, PAGODA_ERR_INVALID_ARGUMENT, tally);
}

/* supports() on SAMPLE descriptors: every backend must judge them as the reference does. */
static void descriptor_cases(conf_tally_t *tally) {
    pagoda_op_sample_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rows = 3;
    a.cols = 1000;
    conf_check_supports("rows 3, cols 1000", PAGODA_OP_SAMPLE, &a, 1, tally);
    a.ldx = 1003;
    conf_check_supports("padded ldx", PAGODA_OP_SAMPLE, &a, 1, tally);
    a.ldx = 999;
    conf_check_supports("ldx < cols", PAGODA_OP_SAMPLE, &a, 0, tally);
    a.ldx = 0;
    a.rows = 0;
    conf_check_supports("rows 0", PAGODA_OP_SAMPLE, &a, 0, tally);
    a.rows = 1;
    a.cols = 0;
    conf_check_supports("cols 0", PAGODA_OP_SAMPLE, &a, 0, tally);
    a.cols = (int64_t)INT32_MAX + 1;
    conf_check_supports("cols past int32", PAGODA_OP_SAMPLE, &a, 0, tally);
}

void conf_cases_sample(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x5A3B1E);
    descriptor_cases(tally);
    /* Around one warp and one block, odd sizes, and vocabularies of real models. */
    static const int64_t cols[] = {1, 2, 7, 31, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 4097};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; ++i) {
        random_case(&rng, 8, cols[i], 0, tally);
        random_case(&rng, 5, cols[i], 1, tally);
    }
    random_case(&rng, 16, 32000, 0, tally);
    random_case(&rng, 4, 128256, 1, tally);
    random_case(&rng, 6, 151936, 0, tally);
    random_case(&rng, 2, 151937, 1, tally);
    for (int kind = 0; kind < 6; ++kind) error_case(&rng, kind, PAGODA_DTYPE_F32, tally);
    /* bf16/f16 logits (logits_dtype): rounded values, so more exact ties among them. */
    static const pagoda_dtype_t halves[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (size_t t = 0; t < 2; ++t) {
        half_case(&rng, halves[t], 8, 7, 1, tally);
        half_case(&rng, halves[t], 5, 1025, 0, tally);
        half_case(&rng, halves[t], 4, 32000, 1, tally);
        half_case(&rng, halves[t], 3, 151936, 0, tally);
        error_case(&rng, 0, halves[t], tally);
        error_case(&rng, 1, halves[t], tally);
    }
}
