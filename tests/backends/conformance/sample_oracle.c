/* ops.h's SAMPLE rules, literally: rank every token, weigh, cut, walk. */
#include "sample_oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ranked {
    float logit;
    int32_t token;
    double weight;
} ranked_t;

/* Higher logit first, ties to the lower id. */
static int by_rank(const void *pa, const void *pb) {
    const ranked_t *a = pa, *b = pb;
    if (a->logit != b->logit) return a->logit > b->logit ? -1 : 1;
    return (a->token > b->token) - (a->token < b->token);
}

static int by_token(const void *pa, const void *pb) {
    const ranked_t *a = pa, *b = pb;
    return (a->token > b->token) - (a->token < b->token);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) abort(); /* a test helper: out of memory ends the test run */
    return p;
}

int sample_oracle_row(const float *logits, int64_t cols, float temperature, int32_t top_k,
                      float top_p, float min_p, sample_oracle_t *o) {
    memset(o, 0, sizeof *o);
    if (!(temperature >= 0.0f && isfinite(temperature)) || !(top_p > 0.0f && top_p <= 1.0f) ||
        !(min_p >= 0.0f && min_p <= 1.0f))
        return 0;
    ranked_t *all = xmalloc((size_t)cols * sizeof *all);
    int64_t n = 0;
    for (int64_t i = 0; i < cols; ++i) {
        if (isnan(logits[i])) {
            free(all);
            return 0;
        }
        if (logits[i] > -INFINITY) all[n++] = (ranked_t){logits[i], (int32_t)i, 0.0};
    }
    if (n == 0) {
        free(all);
        return 0;
    }
    qsort(all, (size_t)n, sizeof *all, by_rank);

    if (temperature == 0.0f) {
        n = 1; /* the best in rank order: the lowest id among the largest */
        all[0].weight = 1.0;
        o->greedy = 1;
    } else {
        o->walk_rank_order = top_k > 0 && top_k < cols;
        if (o->walk_rank_order && top_k < n) n = top_k;
        const float max = all[0].logit;
        double total = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            all[i].weight = all[i].logit == max
                                ? 1.0
                                : exp(((double)all[i].logit - (double)max) / (double)temperature);
            total += all[i].weight;
        }
        if (top_p < 1.0f) {
            const double target = (double)top_p * total;
            double mass = 0.0;
            int64_t keep = 0;
            while (keep < n && mass < target) mass += all[keep++].weight;
            n = keep > 0 ? keep : 1;
        }
        /* Min-p and zero weights: the weights fall along the ranking, so they cut a suffix. */
        while (n > 1 && (all[n - 1].weight < (double)min_p || all[n - 1].weight <= 0.0)) --n;
        if (!o->walk_rank_order) qsort(all, (size_t)n, sizeof *all, by_token);
    }

    o->n = n;
    o->tokens = xmalloc((size_t)n * sizeof *o->tokens);
    o->lo = xmalloc((size_t)n * sizeof *o->lo);
    o->hi = xmalloc((size_t)n * sizeof *o->hi);
    double mass = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        o->tokens[i] = all[i].token;
        o->lo[i] = mass;
        mass += all[i].weight;
        o->hi[i] = mass;
    }
    o->total = mass;
    free(all);
    return 1;
}

void sample_oracle_free(sample_oracle_t *o) {
    free(o->tokens);
    free(o->lo);
    free(o->hi);
    memset(o, 0, sizeof *o);
}

int32_t sample_oracle_pick(const sample_oracle_t *o, float uniform) {
    const double target = (double)uniform * o->total;
    for (int64_t i = 0; i < o->n; ++i)
        if (target < o->hi[i]) return o->tokens[i];
    return o->tokens[o->n - 1];
}

int64_t sample_oracle_position(const sample_oracle_t *o, int32_t token) {
    for (int64_t i = 0; i < o->n; ++i)
        if (o->tokens[i] == token) return i;
    return -1;
}

int sample_oracle_accepts(const sample_oracle_t *o, int32_t token, float uniform, double rel_tol) {
    const int64_t i = sample_oracle_position(o, token);
    if (i < 0) return 0;
    if (o->greedy) return 1;
    const double target = (double)uniform * o->total, slack = rel_tol * o->total;
    /* The last survivor also takes a target rounded past the top. */
    const double hi = i == o->n - 1 ? INFINITY : o->hi[i];
    return target >= o->lo[i] - slack && target < hi + slack;
}
