/* Comparing an output of a backend under test with the reference's (conf_compare_tensor), and
 * perturbing one for the suite's check of itself (conf_perturb). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* ------------------------------------------------------------------------------------------ */
/* Comparing                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static int compare_f32(const conf_tensor_t *t, const float *ref, const float *got, char *why,
                       size_t why_size) {
    const size_t n = t->bytes / sizeof(float);
    double max_ref = 0.0, max_diff = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; ++i) {
        if (isnan(ref[i]) != isnan(got[i]) || isinf(ref[i]) != isinf(got[i]) ||
            (isinf(ref[i]) && ref[i] != got[i])) {
            snprintf(why, why_size, "%s[%zu] = %g where the reference has %g", t->name, i,
                     (double)got[i], (double)ref[i]);
            return 0;
        }
        if (!isfinite(ref[i])) continue;
        const double a = fabs((double)ref[i]), d = fabs((double)got[i] - (double)ref[i]);
        if (a > max_ref) max_ref = a;
        if (d > max_diff) {
            max_diff = d;
            worst = i;
        }
    }
    const double err = max_diff / (max_ref > 1e-30 ? max_ref : 1e-30);
    if (err <= t->tolerance) return 1;
    snprintf(why, why_size,
             "%s: relative error %.3g > %.1g (worst at element %zu: %.9g, reference %.9g)",
             t->name, err, t->tolerance, worst, (double)got[worst], (double)ref[worst]);
    return 0;
}

static int compare_exact(const conf_tensor_t *t, const unsigned char *ref,
                         const unsigned char *got, char *why, size_t why_size) {
    for (size_t i = 0; i < t->bytes; ++i)
        if (ref[i] != got[i]) {
            size_t differing = 0;
            for (size_t j = i; j < t->bytes; ++j) differing += ref[j] != got[j];
            snprintf(why, why_size,
                     "%s: byte %zu is 0x%02x, the reference's 0x%02x (%zu of %zu bytes differ)",
                     t->name, i, got[i], ref[i], differing, t->bytes);
            return 0;
        }
    return 1;
}

static int compare_argmax(const conf_tensor_t *t, const int32_t *ref, const int32_t *got,
                          const float *scores, char *why, size_t why_size) {
    const size_t rows = t->bytes / sizeof(int32_t);
    for (size_t r = 0; r < rows; ++r) {
        if (got[r] == ref[r]) continue;
        if (got[r] < 0 || got[r] >= t->tie_cols) {
            snprintf(why, why_size, "%s[%zu] = %d is outside [0, %lld)", t->name, r, (int)got[r],
                     (long long)t->tie_cols);
            return 0;
        }
        /* A near-tie: scores that come out of a computation may order two close values either
         * way. With tolerance 0 (scores given exactly) only the lowest of equal maxima is right. */
        const float *row = scores + (int64_t)r * t->tie_ld;
        double max_abs = 0.0;
        for (int64_t i = 0; i < t->tie_cols; ++i)
            if (fabs((double)row[i]) > max_abs) max_abs = fabs((double)row[i]);
        const double gap = fabs((double)row[got[r]] - (double)row[ref[r]]);
        if (t->tolerance > 0 && gap <= t->tolerance * max_abs) continue;
        snprintf(why, why_size, "%s[%zu] = %d (score %.9g), the reference's %d (score %.9g)",
                 t->name, r, (int)got[r], (double)row[got[r]], (int)ref[r], (double)row[ref[r]]);
        return 0;
    }
    return 1;
}

/* Widens a bf16 or f16 tensor to f32 (for CONF_F32's rule); `n` elements. */
static float *widen_half(const conf_tensor_t *t, const void *half, size_t n) {
    float *out = test_xmalloc((n > 0 ? n : 1) * sizeof(float));
    const uint16_t *h = half;
    for (size_t i = 0; i < n; ++i)
        out[i] = t->compare == CONF_BF16 ? test_bf16_to_f32(h[i]) : test_f16_to_f32(h[i]);
    return out;
}

static int compare_half(const conf_tensor_t *t, const void *ref, const void *got, char *why,
                        size_t why_size) {
    const size_t n = t->bytes / sizeof(uint16_t);
    float *ref32 = widen_half(t, ref, n), *got32 = widen_half(t, got, n);
    conf_tensor_t as_f32 = *t;
    as_f32.bytes = n * sizeof(float);
    const int ok = compare_f32(&as_f32, ref32, got32, why, why_size);
    free(ref32);
    free(got32);
    return ok;
}

int conf_compare_tensor(const conf_tensor_t *t, const void *ref, const void *got,
                        const float *scores, char *why, size_t why_size) {
    switch (t->compare) {
        case CONF_F32: return compare_f32(t, ref, got, why, why_size);
        case CONF_EXACT: return compare_exact(t, ref, got, why, why_size);
        case CONF_ARGMAX: return compare_argmax(t, ref, got, scores, why, why_size);
        case CONF_CUSTOM: return t->custom->compare(t->custom, t, ref, got, why, why_size);
        case CONF_BF16:
        case CONF_F16: return compare_half(t, ref, got, why, why_size);
        default: return 1;
    }
}

/* Changes `got` by three times what the comparison tolerates (so even an element already
 * off by the whole tolerance the other way ends up beyond it), at one element in the middle:
 * a harness that compares the right data must notice. Returns 0 for an empty tensor. */
int conf_perturb(const conf_tensor_t *t, const void *ref, void *got, const float *scores) {
    if (t->bytes == 0) return 0;
    switch (t->compare) {
        case CONF_F32: {
            const size_t n = t->bytes / sizeof(float);
            double max_ref = 0.0;
            for (size_t i = 0; i < n; ++i)
                if (isfinite(((const float *)ref)[i]) && fabs(((const float *)ref)[i]) > max_ref)
                    max_ref = fabs(((const float *)ref)[i]);
            float *g = (float *)got + n / 2;
            *g = (float)(*g + 3.0 * t->tolerance * (max_ref > 0 ? max_ref : 1.0));
            return 1;
        }
        case CONF_EXACT: ((unsigned char *)got)[t->bytes / 2] ^= 1u; return 1;
        case CONF_ARGMAX: {
            /* The row's lowest score: never a near-tie of its maximum. */
            const size_t r = t->bytes / sizeof(int32_t) / 2;
            const float *row = scores + (int64_t)r * t->tie_ld;
            int32_t lowest = 0;
            for (int64_t i = 1; i < t->tie_cols; ++i)
                if (row[i] < row[lowest]) lowest = (int32_t)i;
            ((int32_t *)got)[r] = lowest == ((const int32_t *)ref)[r] ? -1 : lowest;
            return 1;
        }
        case CONF_CUSTOM: return t->custom->perturb(t->custom, t, ref, got);
        case CONF_BF16:
        case CONF_F16: {
            /* The middle element moved by three times the tolerance of the largest value (at
             * least one unit in the last place of that element's own precision). */
            const size_t n = t->bytes / sizeof(uint16_t);
            float *ref32 = widen_half(t, ref, n);
            double max_ref = 0.0;
            for (size_t i = 0; i < n; ++i)
                if (isfinite(ref32[i]) && fabs(ref32[i]) > max_ref) max_ref = fabs(ref32[i]);
            free(ref32);
            uint16_t *g = (uint16_t *)got + n / 2;
            const float before = t->compare == CONF_BF16 ? test_bf16_to_f32(*g) : test_f16_to_f32(*g);
            const float after = (float)(before + 3.0 * t->tolerance * (max_ref > 0 ? max_ref : 1.0));
            *g = t->compare == CONF_BF16 ? test_f32_to_bf16(after) : test_f32_to_f16(after);
            if (*g == (t->compare == CONF_BF16 ? test_f32_to_bf16(before) : test_f32_to_f16(before)))
                *g ^= 0x40; /* rounded back: flip a high mantissa bit instead */
            return 1;
        }
        default: return 0;
    }
}

