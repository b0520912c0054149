/* ROPE and KV_WRITE, which share RoPE's arithmetic (KV_WRITE's k_rope rotates the keys on their
 * way into the cache, bit for bit as ROPE then KV_WRITE would store them). RoFormer (Su et al.,
 * arXiv:2104.09864) Eq. 34: pair (x0, x1) turns by the angle position · inv_freq[i]. The
 * frequencies and angles are computed in double, as the CPU backend does (at position 128k an f32
 * angle is off by ~0.004 rad); cos and sin are rounded to f32 and the pair rotates in f32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_checks.h"

static int64_t rot_dim_of(const pagoda_op_rope_t *a) {
    return a->rot_dim == 0 ? a->head_dim : a->rot_dim;
}

pagoda_status_t ref_rope_frequencies(const ref_backend_t *b, const char *op, const char *prefix,
                                     const pagoda_op_rope_t *a, double *inv) {
    const int64_t rot_dim = rot_dim_of(a), pairs = rot_dim / 2;
    if (a->freq_factors != NULL)
        for (int64_t i = 0; i < pairs; ++i)
            if (!(isfinite(a->freq_factors[i]) && a->freq_factors[i] > 0.0f))
                return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                                "%s: %sfreq_factors[%lld] = %g must be finite and positive", op,
                                prefix, (long long)i, (double)a->freq_factors[i]);
    for (int64_t i = 0; i < pairs; ++i) {
        inv[i] = pow((double)a->theta, -2.0 * (double)i / (double)rot_dim);
        if (a->scaling == PAGODA_ROPE_SCALING_LINEAR) {
            inv[i] /= (double)a->factor; /* positions / factor, folded into the frequency */
        } else if (a->scaling == PAGODA_ROPE_SCALING_LLAMA3) {
            /* Meta's llama3 apply_scaling: keep short wavelengths, divide long ones by factor,
             * blend those between. */
            const double omp = (double)a->original_max_position;
            const double lo = (double)a->low_freq_factor, hi = (double)a->high_freq_factor;
            const double wavelen = 2.0 * 3.14159265358979323846 / inv[i];
            if (wavelen > omp / lo) {
                inv[i] /= (double)a->factor;
            } else if (wavelen >= omp / hi) {
                const double s = (omp / wavelen - lo) / (hi - lo);
                inv[i] = (1.0 - s) * inv[i] / (double)a->factor + s * inv[i];
            }
        }
        if (a->freq_factors != NULL) inv[i] /= (double)a->freq_factors[i];
    }
    return PAGODA_OK;
}

void ref_rope_rotate(const pagoda_op_rope_t *a, int32_t position, const double *inv_freq,
                     float *head) {
    const int64_t pairs = rot_dim_of(a) / 2;
    for (int64_t i = 0; i < pairs; ++i) {
        const double angle = (double)position * inv_freq[i];
        const float c = (float)cos(angle), s = (float)sin(angle);
        /* Half-split pairs element i with i + rot_dim/2; interleaved pairs 2i with 2i + 1. */
        const int64_t e0 = a->layout == PAGODA_ROPE_HALF_SPLIT ? i : 2 * i;
        const int64_t e1 = a->layout == PAGODA_ROPE_HALF_SPLIT ? i + pairs : 2 * i + 1;
        const float x0 = head[e0], x1 = head[e1];
        head[e0] = x0 * c - x1 * s;
        head[e1] = x1 * c + x0 * s;
    }
}

pagoda_status_t ref_run_rope(const ref_backend_t *b, const pagoda_op_rope_t *a) {
    REF_CHECK(ref_check_pointer(b, "rope", "x", a->x));
    REF_CHECK(ref_check_pointer(b, "rope", "positions", a->positions));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t stride = ref_packed_or(a->token_stride, a->n_heads * a->head_dim);
    double *inv = malloc((size_t)(rot_dim_of(a) / 2 + 1) * sizeof *inv);
    float *head = malloc((size_t)a->head_dim * sizeof *head);
    pagoda_status_t s = inv != NULL && head != NULL
                            ? ref_rope_frequencies(b, "rope", "", a, inv)
                            : ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "rope: no memory for a head");
    for (int64_t t = 0; s == PAGODA_OK && t < a->n_tokens; ++t)
        for (int64_t h = 0; h < a->n_heads; ++h) {
            const int64_t at = t * stride + h * a->head_dim;
            for (int64_t e = 0; e < a->head_dim; ++e) head[e] = ref_load(a->x, act, at + e);
            ref_rope_rotate(a, a->positions[t], inv, head);
            for (int64_t e = 0; e < a->head_dim; ++e) ref_store(a->x, act, at + e, head[e]);
        }
    free(inv);
    free(head);
    return s;
}

/* Token t's K and V (all heads) go to slot slot_mapping[t] of the caches, laid out
 * [num_blocks][n_kv_heads][block_size][head_dim]; a negative slot skips the token. Every slot
 * is checked before anything is written, so a failed launch leaves the caches as they were. */
pagoda_status_t ref_run_kv_write(const ref_backend_t *b, const pagoda_op_kv_write_t *a) {
    const char *op = "kv_write";
    if (a->n_tokens == 0) return PAGODA_OK;
    REF_CHECK(ref_check_pointer(b, op, "k", a->k));
    REF_CHECK(ref_check_pointer(b, op, "v", a->v));
    REF_CHECK(ref_check_pointer(b, op, "k_cache", a->k_cache));
    REF_CHECK(ref_check_pointer(b, op, "v_cache", a->v_cache));
    REF_CHECK(ref_check_pointer(b, op, "slot_mapping", a->slot_mapping));
    /* The nested rotation is host memory, read now (during the launch) only. */
    pagoda_op_rope_t rope;
    if (a->k_rope != NULL) {
        REF_CHECK(ref_read_args(b, "kv_write: k_rope", a->k_rope, &rope, sizeof rope,
                                offsetof(pagoda_op_rope_t, act_dtype)));
        REF_CHECK(ref_check_pointer(b, op, "k_rope.positions", rope.positions));
    }
    const int64_t n_slots = a->num_blocks * a->block_size;
    for (int64_t t = 0; t < a->n_tokens; ++t)
        if (a->slot_mapping[t] >= n_slots)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: slot_mapping[%lld] = %lld is past the cache's %lld slots", op,
                            (long long)t, (long long)a->slot_mapping[t], (long long)n_slots);

    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t row = a->n_kv_heads * a->head_dim;
    const int64_t k_stride = ref_packed_or(a->k_token_stride, row);
    const int64_t v_stride = ref_packed_or(a->v_token_stride, row);
    double *inv = malloc((size_t)(a->head_dim / 2 + 1) * sizeof *inv);
    float *head = malloc((size_t)a->head_dim * sizeof *head);
    pagoda_status_t s = PAGODA_OK;
    if (inv == NULL || head == NULL)
        s = ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "%s: no memory for a head", op);
    else if (a->k_rope != NULL)
        s = ref_rope_frequencies(b, op, "k_rope.", &rope, inv);
    for (int64_t t = 0; s == PAGODA_OK && t < a->n_tokens; ++t) {
        const int64_t slot = a->slot_mapping[t];
        if (slot < 0) continue; /* padding */
        const int64_t block = slot / a->block_size, offset = slot % a->block_size;
        for (int64_t h = 0; h < a->n_kv_heads; ++h) {
            const int64_t dst = ((block * a->n_kv_heads + h) * a->block_size + offset) * a->head_dim;
            for (int64_t e = 0; e < a->head_dim; ++e)
                head[e] = ref_load(a->k, act, t * k_stride + h * a->head_dim + e);
            if (a->k_rope != NULL) ref_rope_rotate(&rope, rope.positions[t], inv, head);
            for (int64_t e = 0; e < a->head_dim; ++e) {
                ref_store(a->k_cache, a->cache_dtype, dst + e, head[e]);
                ref_store(a->v_cache, a->cache_dtype, dst + e,
                          ref_load(a->v, act, t * v_stride + h * a->head_dim + e));
            }
        }
    }
    free(inv);
    free(head);
    return s;
}
