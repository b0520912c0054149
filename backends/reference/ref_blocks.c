/* GGUF's quantized block formats, decoded to f32 value for value as ggml's reference decoders
 * (dequantize_row_*) compute them: every product in f32, in ggml's order, and no fused
 * multiply-add (this file is compiled with -ffp-contract=off), so the values are bit-exact. */
#include <string.h>

#include "ref_internal.h"

static float half_at(const unsigned char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return ref_f16_to_f32(h);
}

/* Q8_0: f16 scale d, then 32 int8 q; value = q · d. */
static void decode_q8_0(const unsigned char *block, float *out) {
    const float d = half_at(block);
    const signed char *q = (const signed char *)(block + 2);
    for (int j = 0; j < 32; ++j) out[j] = (float)q[j] * d;
}

/* Q4_0: f16 scale d, 16 bytes: low nibbles are values 0-15, high nibbles 16-31;
 * value = (q − 8) · d. */
static void decode_q4_0(const unsigned char *block, float *out) {
    const float d = half_at(block);
    const unsigned char *q = block + 2;
    for (int j = 0; j < 16; ++j) {
        out[j] = (float)((q[j] & 0x0F) - 8) * d;
        out[j + 16] = (float)((q[j] >> 4) - 8) * d;
    }
}

/* Q4_K and Q5_K pack 8 six-bit scales and 8 six-bit mins in 12 bytes: sub-blocks 0-3 in the
 * low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11
 * with their top 2 bits in the high bits of bytes 0-3 (scales) and 4-7 (mins). */
static void scale_and_min(const unsigned char *p, int sub, float *scale, float *min) {
    if (sub < 4) {
        *scale = (float)(p[sub] & 63);
        *min = (float)(p[sub + 4] & 63);
    } else {
        *scale = (float)((p[sub + 4] & 0x0F) | ((p[sub - 4] >> 6) << 4));
        *min = (float)((p[sub + 4] >> 4) | ((p[sub] >> 6) << 4));
    }
}

/* Q4_K: f16 d and dmin, 12 bytes of scales and mins, 128 bytes of nibbles. Each 64 values
 * share 32 bytes, low nibbles first; value = d·scale · q − dmin·min. With `qh` (Q5_K), bit
 * 2·pair (first sub-block of the pair) or 2·pair+1 (second) of qh[l] adds 16 to q. */
static void decode_k4(const unsigned char *block, const unsigned char *qh, const unsigned char *qs,
                      float *out) {
    const float d = half_at(block), dmin = half_at(block + 2);
    const unsigned char *scales = block + 4;
    for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
        float s0, m0, s1, m1;
        scale_and_min(scales, 2 * pair, &s0, &m0);
        scale_and_min(scales, 2 * pair + 1, &s1, &m1);
        const float d0 = d * s0, min0 = dmin * m0, d1 = d * s1, min1 = dmin * m1;
        const unsigned bit0 = 1u << (2 * pair), bit1 = 2u << (2 * pair);
        for (int l = 0; l < 32; ++l) {
            const int high0 = qh != NULL && (qh[l] & bit0) ? 16 : 0;
            const int high1 = qh != NULL && (qh[l] & bit1) ? 16 : 0;
            out[l] = d0 * (float)((qs[l] & 0x0F) + high0) - min0;
            out[l + 32] = d1 * (float)((qs[l] >> 4) + high1) - min1;
        }
    }
}

/* Q6_K: 128 bytes of low nibbles ql, 64 bytes of 2-bit highs qh, 16 int8 scales (one per 16
 * values), f16 d; value = d·scale · (q − 32). Each half of 128 values reads 64 ql and 32 qh. */
static void decode_q6_k(const unsigned char *block, float *out) {
    const unsigned char *ql = block, *qh = block + 128;
    const signed char *sc = (const signed char *)(block + 192);
    const float d = half_at(block + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, out += 128) {
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;
            const int q0 = (int)((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q1 = (int)((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q2 = (int)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q3 = (int)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * (float)sc[s] * (float)q0;
            out[l + 32] = d * (float)sc[s + 2] * (float)q1;
            out[l + 64] = d * (float)sc[s + 4] * (float)q2;
            out[l + 96] = d * (float)sc[s + 6] * (float)q3;
        }
    }
}

void ref_decode_row(pagoda_dtype_t t, const void *row, int64_t n, float *out) {
    const unsigned char *p = row;
    const int64_t values = ref_block_values(t), bytes = ref_block_bytes(t);
    if (ref_is_plain(t)) {
        for (int64_t i = 0; i < n; ++i) out[i] = ref_load(row, t, i);
        return;
    }
    for (int64_t blk = 0; blk < n / values; ++blk, p += bytes, out += values) {
        switch (t) {
            case PAGODA_DTYPE_Q8_0: decode_q8_0(p, out); break;
            case PAGODA_DTYPE_Q4_0: decode_q4_0(p, out); break;
            case PAGODA_DTYPE_Q4_K: decode_k4(p, NULL, p + 16, out); break;
            case PAGODA_DTYPE_Q5_K: decode_k4(p, p + 16, p + 48, out); break;
            case PAGODA_DTYPE_Q6_K: decode_q6_k(p, out); break;
            default: break; /* the checks admit no other type */
        }
    }
}
