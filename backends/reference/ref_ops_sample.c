/* SAMPLE and the mixture-of-experts ops, MOE_ROUTE and MOE_MATMUL. SAMPLE follows ops.h's rules
 * literally, a row at a time in double: the candidates, top-k by a full sort in rank order
 * (higher logit first, ties to the lower id), top-p, min-p, then the inverse CDF at `uniform`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_checks.h"

typedef struct candidate {
    float logit;
    int32_t token;
    double weight;
} candidate_t;

/* Whether a ranks before b. */
static int ranks_before(const candidate_t *a, const candidate_t *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->token < b->token);
}

static int by_rank(const void *pa, const void *pb) {
    const candidate_t *a = pa, *b = pb;
    return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

/* ops.h's w = exp((logit − max) / T), exactly 1 at the maximum (so a +inf maximum weighs 1). */
static double weight_of(float logit, float max, double temperature) {
    return logit == max ? 1.0 : exp(((double)logit - (double)max) / temperature);
}

/* One row with T > 0, no NaN and at least one logit above −inf. `c` and `ranked` hold `cols`. */
static int32_t draw_row(const float *x, int64_t cols, float t, int32_t top_k, float top_p,
                        float min_p, float uniform, candidate_t *c, candidate_t *ranked) {
    int64_t n = 0;
    for (int64_t i = 0; i < cols; ++i)
        if (x[i] > -INFINITY) c[n++] = (candidate_t){x[i], (int32_t)i, 0.0};
    const int use_top_k = top_k > 0 && (int64_t)top_k < cols;
    if (use_top_k) { /* the k best, walked in rank order from here on */
        qsort(c, (size_t)n, sizeof *c, by_rank);
        if ((int64_t)top_k < n) n = top_k;
    }
    float max = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
        if (c[i].logit > max) max = c[i].logit;
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) total += c[i].weight = weight_of(c[i].logit, max, t);

    if (top_p < 1.0f) { /* the shortest rank-order prefix reaching top_p · Σw, at least one */
        const candidate_t *order = c;
        if (!use_top_k) {
            memcpy(ranked, c, (size_t)n * sizeof *c);
            qsort(ranked, (size_t)n, sizeof *c, by_rank);
            order = ranked;
        }
        const double target = (double)top_p * total;
        double mass = 0.0;
        int64_t keep = 0;
        while (keep < n && mass < target) mass += order[keep++].weight;
        const candidate_t last = order[(keep > 1 ? keep : 1) - 1];
        int64_t kept = 0;
        for (int64_t i = 0; i < n; ++i)
            if (!ranks_before(&last, &c[i])) c[kept++] = c[i];
        n = kept;
    }
    int64_t kept = 0; /* min-p: w < min_p means p < min_p · p_max; w = 0 is never drawn */
    for (int64_t i = 0; i < n; ++i)
        if (!(c[i].weight < (double)min_p || c[i].weight <= 0.0)) c[kept++] = c[i];
    n = kept;

    double survivors = 0.0, mass = 0.0;
    for (int64_t i = 0; i < n; ++i) survivors += c[i].weight;
    const double target = (double)uniform * survivors;
    for (int64_t i = 0; i < n; ++i) {
        mass += c[i].weight;
        if (target < mass) return c[i].token;
    }
    return c[n - 1].token; /* rounding put the target at the very top */
}

/* log_softmax(x)[token] at temperature 1, in double; NaN for a row holding +inf. */
static float raw_logprob(const float *x, int64_t cols, int32_t token) {
    float max = -INFINITY;
    for (int64_t i = 0; i < cols; ++i)
        if (x[i] > max) max = x[i];
    if (max == INFINITY) return NAN;
    double sum = 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += exp((double)x[i] - (double)max);
    return (float)((double)x[token] - (double)max - log(sum));
}

pagoda_status_t ref_run_sample(const ref_backend_t *b, const pagoda_op_sample_t *a) {
    const char *op = "sample";
    REF_CHECK(ref_check_pointer(b, op, "logits", a->logits));
    REF_CHECK(ref_check_pointer(b, op, "temperature", a->temperature));
    REF_CHECK(ref_check_pointer(b, op, "top_k", a->top_k));
    REF_CHECK(ref_check_pointer(b, op, "top_p", a->top_p));
    REF_CHECK(ref_check_pointer(b, op, "min_p", a->min_p));
    REF_CHECK(ref_check_pointer(b, op, "uniform", a->uniform));
    REF_CHECK(ref_check_pointer(b, op, "out", a->out));
    /* Every row is checked before any out[r] is written: parameters first, then the logits. */
    for (int64_t r = 0; r < a->rows; ++r) {
        const float t = a->temperature[r], p = a->top_p[r], m = a->min_p[r], u = a->uniform[r];
        const char *bad = !(t >= 0.0f && t <= 3.402823466e38f) ? "temperature"
                          : !(p > 0.0f && p <= 1.0f)          ? "top_p"
                          : !(m >= 0.0f && m <= 1.0f)          ? "min_p"
                          : !(u >= 0.0f && u < 1.0f)           ? "uniform"
                                                               : NULL;
        if (bad != NULL)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s[%lld] is out of range", op,
                            bad, (long long)r);
    }
    const pagoda_dtype_t dtype = ref_act(a->logits_dtype);
    const int64_t ldx = ref_packed_or(a->ldx, a->cols);
    float *x = malloc((size_t)a->cols * sizeof *x);
    candidate_t *c = malloc((size_t)a->cols * sizeof *c), *ranked = malloc((size_t)a->cols * sizeof *c);
    pagoda_status_t s = PAGODA_OK;
    if (x == NULL || c == NULL || ranked == NULL)
        s = ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "%s: no memory for a row of %lld", op,
                     (long long)a->cols);
    for (int64_t r = 0; s == PAGODA_OK && r < a->rows; ++r) {
        int pickable = 0;
        for (int64_t i = 0; s == PAGODA_OK && i < a->cols; ++i) {
            const float v = ref_load(a->logits, dtype, r * ldx + i);
            if (isnan(v))
                s = ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: logits row %lld has a NaN at column %lld",
                             op, (long long)r, (long long)i);
            pickable |= v > -INFINITY;
        }
        if (s == PAGODA_OK && !pickable)
            s = ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                         "%s: logits row %lld is -inf everywhere, so no token can be picked", op,
                         (long long)r);
    }
    for (int64_t r = 0; s == PAGODA_OK && r < a->rows; ++r) {
        for (int64_t i = 0; i < a->cols; ++i) x[i] = ref_load(a->logits, dtype, r * ldx + i);
        int32_t token = 0;
        if (a->temperature[r] == 0.0f) { /* greedy: the lowest id among the largest */
            for (int64_t i = 1; i < a->cols; ++i)
                if (x[i] > x[token]) token = (int32_t)i;
        } else {
            token = draw_row(x, a->cols, a->temperature[r], a->top_k[r], a->top_p[r], a->min_p[r],
                             a->uniform[r], c, ranked);
        }
        a->out[r] = token;
        if (a->logprobs != NULL) a->logprobs[r] = raw_logprob(x, a->cols, token);
    }
    free(x);
    free(c);
    free(ranked);
    return s;
}

/* ------------------------------------------------------------------------------------------ */
/* Mixture of experts                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* exp(x − max), and 1 for every logit equal to the maximum (the limit where x − max is NaN). */
static double numerator(float x, float max) {
    return x == max ? 1.0 : exp((double)x - (double)max);
}

pagoda_status_t ref_run_moe_route(const ref_backend_t *b, const pagoda_op_moe_route_t *a) {
    const char *op = "moe_route";
    REF_CHECK(ref_check_pointer(b, op, "logits", a->logits));
    REF_CHECK(ref_check_pointer(b, op, "expert_ids", a->expert_ids));
    REF_CHECK(ref_check_pointer(b, op, "weights", a->weights));
    for (int64_t i = 0; i < a->n_tokens * a->n_experts; ++i)
        if (isnan(a->logits[i]))
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: logits[%lld, %lld] is NaN", op,
                            (long long)(i / a->n_experts), (long long)(i % a->n_experts));
    unsigned char picked[REF_MOE_MAX_EXPERTS];
    for (int64_t t = 0; t < a->n_tokens; ++t) {
        const float *x = a->logits + t * a->n_experts;
        float max = -INFINITY;
        for (int64_t j = 0; j < a->n_experts; ++j)
            if (x[j] > max) max = x[j];
        double total = 0.0, chosen = 0.0;
        for (int64_t j = 0; j < a->n_experts; ++j) total += numerator(x[j], max);
        /* Selection: top_k passes, each taking the best expert not yet picked. */
        memset(picked, 0, sizeof picked);
        int32_t *ids = a->expert_ids + t * a->top_k;
        for (int64_t s = 0; s < a->top_k; ++s) {
            int64_t best = -1;
            for (int64_t j = 0; j < a->n_experts; ++j)
                if (!picked[j] && (best < 0 || x[j] > x[best])) best = j;
            picked[best] = 1;
            ids[s] = (int32_t)best;
            chosen += numerator(x[best], max);
        }
        /* SOFTMAX_TOPK_NORM divides by the picked ones' sum: a softmax over the picked logits. */
        const double denominator = a->routing == PAGODA_MOE_SOFTMAX_TOPK_NORM ? chosen : total;
        for (int64_t s = 0; s < a->top_k; ++s)
            a->weights[t * a->top_k + s] = (float)(numerator(x[ids[s]], max) / denominator);
    }
    return PAGODA_OK;
}

static int overlaps(const void *p, int64_t p_bytes, const void *q, int64_t q_bytes) {
    const char *x = p, *y = q;
    return x < y + q_bytes && y < x + p_bytes;
}

pagoda_status_t ref_run_moe_matmul(const ref_backend_t *b, const pagoda_op_moe_matmul_t *a) {
    const char *op = "moe_matmul";
    REF_CHECK(ref_check_pointer(b, op, "x", a->x));
    REF_CHECK(ref_check_pointer(b, op, "experts", a->experts));
    REF_CHECK(ref_check_pointer(b, op, "expert_ids", a->expert_ids));
    REF_CHECK(ref_check_pointer(b, op, "y", a->y));
    const int64_t slots = a->n_tokens * a->top_k;
    const int64_t ldx = ref_packed_or(a->ldx, a->k), ldw = ref_packed_or(a->ldw, a->k);
    const int64_t ldy = ref_packed_or(a->ldy, a->n);
    const int64_t x_rows = a->x_per_slot ? slots : a->n_tokens;
    const int64_t y_rows = a->weights != NULL ? a->n_tokens : slots;
    const int64_t xb = ref_block_bytes(a->x_dtype), yb = ref_block_bytes(a->y_dtype);
    if (overlaps(a->y, ((y_rows - 1) * ldy + a->n) * yb, a->x, ((x_rows - 1) * ldx + a->k) * xb))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: y overlaps x", op);
    /* The ids, and the matrices of the experts they pick, before anything is written. */
    for (int64_t i = 0; i < slots; ++i) {
        const int64_t e = a->expert_ids[i], h = e - a->expert_offset;
        if (e < 0)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: expert_ids[%lld] = %lld is negative (expert ids are global, from 0)",
                            op, (long long)i, (long long)e);
        if (h >= 0 && h < a->n_experts && a->experts[h] == NULL)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: experts[%lld] is NULL, but expert_ids[%lld] picks it", op,
                            (long long)h, (long long)i);
    }
    const int64_t w_row_bytes = ref_row_bytes(a->w_dtype, ldw);
    float *w_row = malloc((size_t)a->k * sizeof *w_row);
    if (w_row == NULL)
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "%s: no memory for a row of %lld", op,
                        (long long)a->k);
    /* Output row r: a slot's product (no weights), or a token's weighted sum over its slots. A
     * slot whose expert is not held here adds nothing (its row stays 0). */
    for (int64_t r = 0; r < y_rows; ++r)
        for (int64_t j = 0; j < a->n; ++j) {
            const int64_t first = a->weights != NULL ? r * a->top_k : r;
            const int64_t count = a->weights != NULL ? a->top_k : 1;
            double sum = 0.0;
            for (int64_t i = first; i < first + count; ++i) {
                const int64_t h = a->expert_ids[i] - a->expert_offset;
                if (h < 0 || h >= a->n_experts) continue;
                const int64_t x_row = a->x_per_slot ? i : i / a->top_k;
                ref_decode_row(a->w_dtype, (const char *)a->experts[h] + j * w_row_bytes, a->k, w_row);
                double dot = 0.0;
                for (int64_t l = 0; l < a->k; ++l)
                    dot += (double)ref_load(a->x, a->x_dtype, x_row * ldx + l) * (double)w_row[l];
                sum += a->weights != NULL ? (double)a->weights[i] * dot : dot;
            }
            ref_store(a->y, a->y_dtype, r * ldy + j, (float)sum);
        }
    free(w_row);
    return PAGODA_OK;
}
