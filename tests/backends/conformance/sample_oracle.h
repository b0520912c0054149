/* The exact outcome of ops.h's PAGODA_OP_SAMPLE for one row, computed plainly in double: which
 * tokens survive the filters and which interval of `uniform · total` picks each. Shared by the
 * CPU backend's test and the conformance comparison of SAMPLE outputs. Written from ops.h alone
 * (sort everything, then filter), independently of any backend's code. */
#ifndef PAGODA_SAMPLE_ORACLE_H
#define PAGODA_SAMPLE_ORACLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sample_oracle {
    int greedy;           /* temperature 0: only `tokens[0]` (the argmax), n = 1 */
    int64_t n;            /* survivors */
    int32_t *tokens;      /* [n] in walk order (rank order when top-k applied, else id order) */
    double *lo, *hi;      /* [n] each survivor's CDF interval [lo, hi) of the running weight */
    double total;         /* Σ survivors' weights: hi[n - 1] */
    int walk_rank_order;  /* whether top-k applied (the walk is in rank order) */
} sample_oracle_t;

/* Fills `o` for a row of `cols` logits. Returns 0 (leaving `o` empty) when ops.h calls the row
 * an error: a NaN, every logit -inf, or a parameter out of range. */
int sample_oracle_row(const float *logits, int64_t cols, float temperature, int32_t top_k,
                      float top_p, float min_p, sample_oracle_t *o);
void sample_oracle_free(sample_oracle_t *o);

/* The token ops.h picks for `uniform` (exact in double). */
int32_t sample_oracle_pick(const sample_oracle_t *o, float uniform);
/* Where `token` sits among the survivors, or -1 if it does not survive. */
int64_t sample_oracle_position(const sample_oracle_t *o, int32_t token);
/* Whether a backend may answer `token` for `uniform`: for a greedy row only the argmax; else a
 * survivor whose interval contains uniform · total give or take `rel_tol · total` (rounding of
 * the running sums may move a pick across a boundary, never further). */
int sample_oracle_accepts(const sample_oracle_t *o, int32_t token, float uniform, double rel_tol);

#ifdef __cplusplus
}
#endif

#endif /* PAGODA_SAMPLE_ORACLE_H */
