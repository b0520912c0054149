/* The dense kernels: MATMUL, EMBEDDING, RMSNORM, SILU_MUL, ADD, ARGMAX, SOFTMAX, SOFTCAP.
 * Each reads its inputs widened to f32, computes in f32 or double (never less, ops.h), and
 * rounds once to the output's type. Naive loops: a row or an element at a time. */
#include <math.h>
#include <stdlib.h>

#include "ref_checks.h"

/* y[i, j] = Σ_l x[i, l] · W[j, l] (+ bias[j]) (+ y[i, j]). W's row j is decoded to f32 once
 * (block types through ref_decode_row) and the dot products are summed in double. The flags
 * QUANTIZE_X, QUANTIZE_X_BLOCK and ROUND_W give leave to lose precision; this plugin declines
 * it and computes exactly, which ops.h allows. */
pagoda_status_t ref_run_matmul(const ref_backend_t *b, const pagoda_op_matmul_t *a) {
    REF_CHECK(ref_check_pointer(b, "matmul", "x", a->x));
    REF_CHECK(ref_check_pointer(b, "matmul", "w", a->w));
    REF_CHECK(ref_check_pointer(b, "matmul", "y", a->y));
    const int64_t ldx = ref_packed_or(a->ldx, a->k), ldw = ref_packed_or(a->ldw, a->k);
    const int64_t ldy = ref_packed_or(a->ldy, a->n);
    const int64_t w_row_bytes = ref_row_bytes(a->w_dtype, ldw);
    const int accumulate = (a->flags & PAGODA_MATMUL_ACCUMULATE) != 0;
    float *w_row = malloc((size_t)a->k * sizeof *w_row);
    if (w_row == NULL)
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "matmul: no memory for a row of %lld weights",
                        (long long)a->k);
    for (int64_t j = 0; j < a->n; ++j) {
        ref_decode_row(a->w_dtype, (const char *)a->w + j * w_row_bytes, a->k, w_row);
        for (int64_t i = 0; i < a->m; ++i) {
            double sum = 0.0;
            for (int64_t l = 0; l < a->k; ++l)
                sum += (double)ref_load(a->x, a->x_dtype, i * ldx + l) * (double)w_row[l];
            if (a->bias != NULL) sum += (double)((const float *)a->bias)[j];
            if (accumulate) sum += (double)ref_load(a->y, a->y_dtype, i * ldy + j);
            ref_store(a->y, a->y_dtype, i * ldy + j, (float)sum);
        }
    }
    free(w_row);
    return PAGODA_OK;
}

/* out[i, :] = scale · table[ids[i], :]. Every id is checked before anything is written. */
pagoda_status_t ref_run_embedding(const ref_backend_t *b, const pagoda_op_embedding_t *a) {
    REF_CHECK(ref_check_pointer(b, "embedding", "table", a->table));
    REF_CHECK(ref_check_pointer(b, "embedding", "ids", a->ids));
    REF_CHECK(ref_check_pointer(b, "embedding", "out", a->out));
    for (int64_t i = 0; i < a->n_tokens; ++i)
        if (a->ids[i] < 0 || a->ids[i] >= a->vocab_size)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "embedding: ids[%lld] = %d is outside [0, vocab_size = %lld)",
                            (long long)i, (int)a->ids[i], (long long)a->vocab_size);
    const pagoda_dtype_t out_dtype = ref_act(a->out_dtype);
    const float scale = a->scale == 0.0 ? 1.0f : (float)a->scale; /* ops.h: 0 means 1 */
    const int64_t ldo = ref_packed_or(a->ldo, a->dim);
    const int64_t row_bytes = ref_row_bytes(a->table_dtype, a->dim);
    float *row = malloc((size_t)a->dim * sizeof *row);
    if (row == NULL)
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "embedding: no memory for a row of %lld",
                        (long long)a->dim);
    for (int64_t i = 0; i < a->n_tokens; ++i) {
        ref_decode_row(a->table_dtype, (const char *)a->table + a->ids[i] * row_bytes, a->dim, row);
        for (int64_t l = 0; l < a->dim; ++l) ref_store(a->out, out_dtype, i * ldo + l, row[l] * scale);
    }
    free(row);
    return PAGODA_OK;
}

/* out = r / sqrt(mean(r²) + eps) · weight, where r = x, or residual += x first when fused.
 * The mean square is summed in double; the residual stream stays f32 (ops.h). */
pagoda_status_t ref_run_rmsnorm(const ref_backend_t *b, const pagoda_op_rmsnorm_t *a) {
    REF_CHECK(ref_check_pointer(b, "rmsnorm", "x", a->x));
    REF_CHECK(ref_check_pointer(b, "rmsnorm", "weight", a->weight));
    REF_CHECK(ref_check_pointer(b, "rmsnorm", "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t ldx = ref_packed_or(a->ldx, a->dim), ldo = ref_packed_or(a->ldo, a->dim);
    const int64_t ldr = ref_packed_or(a->ld_residual, a->dim);
    for (int64_t r = 0; r < a->rows; ++r) {
        float *res = a->residual != NULL ? (float *)a->residual + r * ldr : NULL;
        double squares = 0.0;
        for (int64_t i = 0; i < a->dim; ++i) {
            float v = ref_load(a->x, act, r * ldx + i);
            if (res != NULL) v = res[i] += v;
            squares += (double)v * (double)v;
        }
        float inv_rms = (float)(1.0 / sqrt(squares / (double)a->dim + (double)a->eps));
#ifdef PAGODA_REFERENCE_BROKEN
        /* The deliberately broken build (pagoda-backend-reference-broken): every output 0.1 %
         * too large, which the conformance suite must catch and name. */
        inv_rms *= 1.001f;
#endif
        /* Each element is read before it is written, so out may alias x (ops.h). */
        for (int64_t i = 0; i < a->dim; ++i) {
            const float v = res != NULL ? res[i] : ref_load(a->x, act, r * ldx + i);
            ref_store(a->out, act, r * ldo + i, v * inv_rms * ref_load(a->weight, a->weight_dtype, i));
        }
    }
    return PAGODA_OK;
}

static float silu(float z) { return z / (1.0f + expf(-z)); }

/* gelu(z) ≈ z/2 · (1 + tanh u), u = √(2/π)·(z + 0.044715·z³), written as z / (1 + e^(−2u)), the
 * same value, which does not cancel for negative z. */
static float gelu_tanh(float z) {
    const float u = 0.7978845608028654f * (z + 0.044715f * z * z * z);
    return z / (1.0f + expf(-2.0f * u));
}

pagoda_status_t ref_run_silu_mul(const ref_backend_t *b, const pagoda_op_silu_mul_t *a) {
    REF_CHECK(ref_check_pointer(b, "silu_mul", "gate", a->gate));
    REF_CHECK(ref_check_pointer(b, "silu_mul", "up", a->up));
    REF_CHECK(ref_check_pointer(b, "silu_mul", "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t ld_in = ref_packed_or(a->ld_in, a->dim), ldo = ref_packed_or(a->ldo, a->dim);
    for (int64_t r = 0; r < a->rows; ++r)
        for (int64_t i = 0; i < a->dim; ++i) {
            const float g = ref_load(a->gate, act, r * ld_in + i);
            const float u = ref_load(a->up, act, r * ld_in + i);
            const float f = a->activation == PAGODA_GLU_GELU_TANH ? gelu_tanh(g) : silu(g);
            ref_store(a->out, act, r * ldo + i, f * u);
        }
    return PAGODA_OK;
}

pagoda_status_t ref_run_add(const ref_backend_t *b, const pagoda_op_add_t *a) {
    REF_CHECK(ref_check_pointer(b, "add", "a", a->a));
    REF_CHECK(ref_check_pointer(b, "add", "b", a->b));
    REF_CHECK(ref_check_pointer(b, "add", "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    for (int64_t i = 0; i < a->n; ++i)
        ref_store(a->out, act, i, ref_load(a->a, act, i) + ref_load(a->b, act, i));
    return PAGODA_OK;
}

/* The first maximum; a NaN counts as larger than any number (the first NaN wins), as NumPy's
 * argmax does, so that a broken row shows. */
pagoda_status_t ref_run_argmax(const ref_backend_t *b, const pagoda_op_argmax_t *a) {
    REF_CHECK(ref_check_pointer(b, "argmax", "x", a->x));
    REF_CHECK(ref_check_pointer(b, "argmax", "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t ldx = ref_packed_or(a->ldx, a->cols);
    for (int64_t r = 0; r < a->rows; ++r) {
        int64_t best = 0;
        float best_v = ref_load(a->x, act, r * ldx);
        for (int64_t i = 1; i < a->cols && !isnan(best_v); ++i) {
            const float v = ref_load(a->x, act, r * ldx + i);
            if (isnan(v) || v > best_v) {
                best = i;
                best_v = v;
            }
        }
        a->out[r] = (int32_t)best;
    }
    return PAGODA_OK;
}

/* softmax(scale · x) per row, in double, with the maximum subtracted first so that no
 * exponent overflows. `out` may alias `x`: a row is read whole before it is written. */
pagoda_status_t ref_run_softmax(const ref_backend_t *b, const pagoda_op_softmax_t *a) {
    REF_CHECK(ref_check_pointer(b, "softmax", "x", a->x));
    REF_CHECK(ref_check_pointer(b, "softmax", "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const double scale = a->scale == 0.0f ? 1.0 : (double)a->scale; /* ops.h: 0 means 1 */
    const int64_t ldx = ref_packed_or(a->ldx, a->cols), ldo = ref_packed_or(a->ldo, a->cols);
    double *e = malloc((size_t)a->cols * sizeof *e);
    if (e == NULL)
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "softmax: no memory for a row of %lld",
                        (long long)a->cols);
    for (int64_t r = 0; r < a->rows; ++r) {
        double max = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < a->cols; ++i) {
            e[i] = scale * (double)ref_load(a->x, act, r * ldx + i);
            if (e[i] > max) max = e[i];
        }
        for (int64_t i = 0; i < a->cols; ++i) sum += e[i] = exp(e[i] - max);
        for (int64_t i = 0; i < a->cols; ++i) ref_store(a->out, act, r * ldo + i, (float)(e[i] / sum));
    }
    free(e);
    return PAGODA_OK;
}

pagoda_status_t ref_run_softcap(const ref_backend_t *b, const pagoda_op_softcap_t *a) {
    REF_CHECK(ref_check_pointer(b, "softcap", "x", a->x));
    const pagoda_dtype_t t = ref_act(a->dtype);
    for (int64_t i = 0; i < a->n; ++i)
        ref_store(a->x, t, i, a->cap * tanhf(ref_load(a->x, t, i) / a->cap));
    return PAGODA_OK;
}
