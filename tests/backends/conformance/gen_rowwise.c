/* ARGMAX and SOFTMAX cases: vocabulary-sized and odd rows, padded strides, exact ties (the
 * lowest index wins), one-ulp near-ties, infinities, in-place softmax, and a chain MATMUL →
 * ARGMAX where each backend takes the argmax of its own logits; each also with bf16/f16 rows
 * (act_dtype). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* ------------------------------------------------------------------------------------------ */
/* ARGMAX                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Plants, in row r, one of the patterns a sampler meets. */
static void plant_pattern(test_rng_t *rng, float *row, int64_t cols, int pattern) {
    switch (pattern) {
        case 1: { /* the maximum several times: the first one counts */
            const float top = 9.0f;
            for (int i = 0; i < 4; ++i) row[test_rng_int(rng, 0, cols - 1)] = top;
            break;
        }
        case 2: /* a flat row */
            for (int64_t i = 0; i < cols; ++i) row[i] = -0.5f;
            break;
        case 3: { /* two candidates one ulp apart: the larger wins, wherever it is */
            const int64_t a = test_rng_int(rng, 0, cols - 1), b = test_rng_int(rng, 0, cols - 1);
            row[a] = 7.0f;
            row[b] = nextafterf(7.0f, 8.0f);
            break;
        }
        case 4: /* the maximum in the last column, -inf elsewhere in places */
            for (int64_t i = 0; i < cols; i += 3) row[i] = -INFINITY;
            row[cols - 1] = 11.0f;
            break;
        default: break; /* plain random */
    }
}

/* `n` f32 values rounded to `dtype` (BF16 or F16) in a new array; `values` keeps what the
 * rounding kept. */
static void *round_to(pagoda_dtype_t dtype, float *values, size_t n) {
    double *kept = test_xmalloc(n * sizeof(double));
    void *out = test_xmalloc(n * pagoda_dtype_size(dtype));
    test_convert_weights(dtype, values, n, out, kept);
    for (size_t i = 0; i < n; ++i) values[i] = (float)kept[i];
    free(kept);
    return out;
}

static void argmax_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                        int padded, conf_tally_t *tally) {
    const int64_t ldx = padded ? cols + test_rng_int(rng, 1, 9) : cols;
    conf_case_t c;
    conf_case_init(&c, "argmax rows=%lld cols=%lld ldx=%lld x=%s", (long long)rows,
                   (long long)cols, (long long)ldx, pagoda_dtype_name(dtype));
    pagoda_op_argmax_t *a = &conf_add_step(&c, PAGODA_OP_ARGMAX)->argmax;
    a->rows = rows;
    a->cols = cols;
    a->ldx = padded ? ldx : 0;
    a->act_dtype = dtype;
    const size_t nx = (size_t)(rows * ldx);
    float *x = conf_random_f32(rng, nx, -8.0f, 8.0f);
    for (int64_t r = 0; r < rows; ++r) plant_pattern(rng, x + r * ldx, cols, (int)(r % 5));
    int tx;
    if (dtype == PAGODA_DTYPE_F32) {
        tx = conf_add_tensor(&c, "x", x, nx * sizeof(float), CONF_DEVICE, CONF_INPUT, 0);
    } else {
        /* The comparison reads f32 scores: the rounded values, as an input no op reads. */
        int tx_half = conf_add_tensor(&c, "x", round_to(dtype, x, nx),
                                      nx * pagoda_dtype_size(dtype), CONF_DEVICE, CONF_INPUT, 0);
        conf_bind(&c, 0, tx_half, offsetof(pagoda_op_argmax_t, x));
        tx = conf_add_tensor(&c, "scores", x, nx * sizeof(float), CONF_DEVICE, CONF_INPUT, 0);
    }
    int32_t *init = test_xmalloc((size_t)rows * sizeof *init);
    for (int64_t r = 0; r < rows; ++r) init[r] = -7;
    /* The scores are given exactly, so no tolerance: the index must be the reference's. */
    int out = conf_add_tensor(&c, "out", init, (size_t)rows * sizeof *init, CONF_DEVICE,
                              CONF_ARGMAX, 0.0);
    c.tensors[out].tie_tensor = tx;
    c.tensors[out].tie_cols = cols;
    c.tensors[out].tie_ld = ldx;
    if (dtype == PAGODA_DTYPE_F32) conf_bind(&c, 0, tx, offsetof(pagoda_op_argmax_t, x));
    conf_bind(&c, 0, out, offsetof(pagoda_op_argmax_t, out));
    conf_check_case(&c, tally);
}

/* Greedy decoding's last two steps: logits = h · Wᵀ, then their argmax, each backend on its
 * own logits; an index may differ only where the reference's logits nearly tie. */
static void logits_argmax_case(test_rng_t *rng, int64_t rows, int64_t vocab, int64_t hidden,
                               pagoda_dtype_t w_dtype, conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "matmul -> argmax rows=%lld vocab=%lld hidden=%lld w=%s", (long long)rows,
                   (long long)vocab, (long long)hidden, pagoda_dtype_name(w_dtype));
    pagoda_op_matmul_t *m = &conf_add_step(&c, PAGODA_OP_MATMUL)->matmul;
    m->x_dtype = m->y_dtype = PAGODA_DTYPE_F32;
    m->w_dtype = w_dtype;
    m->m = rows;
    m->n = vocab;
    m->k = hidden;
    pagoda_op_argmax_t *a = &conf_add_step(&c, PAGODA_OP_ARGMAX)->argmax;
    a->rows = rows;
    a->cols = vocab;
    const double tol = conf_tolerance(w_dtype);
    const size_t nh = (size_t)(rows * hidden), nw = (size_t)(vocab * hidden),
                 nl = (size_t)(rows * vocab);
    int h = conf_add_tensor(&c, "h", conf_random_f32(rng, nh, -1.0f, 1.0f), nh * sizeof(float),
                            CONF_DEVICE, CONF_INPUT, 0);
    int w = conf_add_tensor(&c, "w", conf_random_typed(rng, w_dtype, nw, -1.0f, 1.0f),
                            nw * pagoda_dtype_size(w_dtype), CONF_DEVICE, CONF_INPUT, 0);
    int logits = conf_add_tensor(&c, "logits", test_xcalloc(nl, sizeof(float)),
                                 nl * sizeof(float), CONF_DEVICE, CONF_F32, tol);
    int out = conf_add_tensor(&c, "out", test_xcalloc((size_t)rows, sizeof(int32_t)),
                              (size_t)rows * sizeof(int32_t), CONF_DEVICE, CONF_ARGMAX, tol);
    c.tensors[out].tie_tensor = logits;
    c.tensors[out].tie_cols = vocab;
    c.tensors[out].tie_ld = vocab;
    conf_bind(&c, 0, h, offsetof(pagoda_op_matmul_t, x));
    conf_bind(&c, 0, w, offsetof(pagoda_op_matmul_t, w));
    conf_bind(&c, 0, logits, offsetof(pagoda_op_matmul_t, y));
    conf_bind(&c, 1, logits, offsetof(pagoda_op_argmax_t, x));
    conf_bind(&c, 1, out, offsetof(pagoda_op_argmax_t, out));
    conf_check_case(&c, tally);
}

/* ------------------------------------------------------------------------------------------ */
/* SOFTMAX                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void softmax_case(test_rng_t *rng, pagoda_dtype_t dtype, int64_t rows, int64_t cols,
                         float scale, int padded, int in_place, float spread,
                         conf_tally_t *tally) {
    const int64_t ldx = padded ? cols + test_rng_int(rng, 1, 9) : cols;
    const int64_t ldo = in_place ? ldx : (padded ? cols + test_rng_int(rng, 1, 9) : cols);
    conf_case_t c;
    conf_case_init(&c, "softmax rows=%lld cols=%lld scale=%g spread=%g x=%s%s%s",
                   (long long)rows, (long long)cols, (double)scale, (double)spread,
                   pagoda_dtype_name(dtype), padded ? " strided" : "", in_place ? " out=x" : "");
    pagoda_op_softmax_t *a = &conf_add_step(&c, PAGODA_OP_SOFTMAX)->softmax;
    a->rows = rows;
    a->cols = cols;
    a->scale = scale;
    a->ldx = padded ? ldx : 0;
    a->ldo = padded ? ldo : 0;
    a->act_dtype = dtype;
    /* Half results may differ by one rounding of their type. */
    const double tol = conf_tolerance(dtype);
    const conf_compare_t compare = dtype == PAGODA_DTYPE_BF16  ? CONF_BF16
                                   : dtype == PAGODA_DTYPE_F16 ? CONF_F16
                                                               : CONF_F32;
    const size_t elem = pagoda_dtype_size(dtype);
    const size_t nx = (size_t)(rows * ldx);
    float *x = conf_random_f32(rng, nx, -spread, spread);
    /* Masked entries (-inf) in every third row; their probability is exactly 0. */
    for (int64_t r = 2; r < rows; r += 3)
        for (int64_t i = 0; i < cols - 1; i += 4) x[r * ldx + i] = -INFINITY;
    void *x_init = x;
    if (dtype != PAGODA_DTYPE_F32) {
        x_init = round_to(dtype, x, nx);
        free(x);
    }
    int tx = conf_add_tensor(&c, "x", x_init, nx * elem, CONF_DEVICE,
                             in_place ? compare : CONF_INPUT, tol);
    conf_bind(&c, 0, tx, offsetof(pagoda_op_softmax_t, x));
    if (in_place) {
        conf_bind(&c, 0, tx, offsetof(pagoda_op_softmax_t, out));
    } else {
        const size_t no = (size_t)(rows * ldo);
        int out = conf_add_tensor(&c, "out", conf_random_typed(rng, dtype, no, -1.0f, 1.0f),
                                  no * elem, CONF_DEVICE, compare, tol);
        conf_bind(&c, 0, out, offsetof(pagoda_op_softmax_t, out));
    }
    conf_check_case(&c, tally);
}

void conf_cases_rowwise(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x726f77ull);
    const pagoda_dtype_t f32 = PAGODA_DTYPE_F32;
    static const pagoda_dtype_t types[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (int i = 0; i < 24; ++i)
        argmax_case(&rng, f32, test_rng_int(&rng, 1, 12), test_rng_int(&rng, 1, 3000), i % 2,
                    tally);
    argmax_case(&rng, f32, 5, 128256, 0, tally);
    argmax_case(&rng, f32, 3, 32000, 1, tally);
    argmax_case(&rng, f32, 17, 1, 1, tally);
    for (int i = 0; i < 8; ++i)
        argmax_case(&rng, types[1 + i % 2], test_rng_int(&rng, 1, 12),
                    test_rng_int(&rng, 1, 3000), i % 3 == 0, tally);
    argmax_case(&rng, PAGODA_DTYPE_BF16, 5, 128256, 1, tally);
    argmax_case(&rng, PAGODA_DTYPE_F16, 3, 32000, 0, tally);
    logits_argmax_case(&rng, 4, 3001, 256, PAGODA_DTYPE_F32, tally);
    logits_argmax_case(&rng, 1, 32000, 512, PAGODA_DTYPE_BF16, tally);
    logits_argmax_case(&rng, 9, 5000, 128, PAGODA_DTYPE_F16, tally);

    static const float scales[] = {0.0f, 1.0f, 0.7f, 2.5f};
    for (int i = 0; i < 24; ++i)
        softmax_case(&rng, f32, test_rng_int(&rng, 1, 12), test_rng_int(&rng, 1, 3000),
                     scales[i % 4], (i / 4) % 2, i % 3 == 2, i % 2 ? 40.0f : 3.0f, tally);
    softmax_case(&rng, f32, 4, 128256, 1.0f, 0, 0, 20.0f, tally);
    softmax_case(&rng, f32, 3, 32000, 0.5f, 1, 1, 60.0f, tally);
    for (int i = 0; i < 12; ++i)
        softmax_case(&rng, types[1 + i % 2], test_rng_int(&rng, 1, 12),
                     test_rng_int(&rng, 1, 3000), scales[i % 4], (i / 4) % 2, i % 3 == 2,
                     i % 2 ? 40.0f : 3.0f, tally);
    softmax_case(&rng, PAGODA_DTYPE_BF16, 4, 128256, 1.0f, 1, 0, 20.0f, tally);
    softmax_case(&rng, PAGODA_DTYPE_F16, 3, 32000, 0.5f, 0, 1, 20.0f, tally);
}
