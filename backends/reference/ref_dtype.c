/* Element types: half-precision conversions (round to nearest even, written out bit by bit so
 * that they do not depend on the compiler's _Float16 support), loads and stores, block shapes. */
#include <math.h>
#include <string.h>

#include "ref_internal.h"

float ref_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24); /* zero or subnormal: mant · 2^-24 */
    else if (exp == 31)
        v = mant != 0 ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), (int)exp - 25);
    uint32_t bits;
    memcpy(&bits, &v, 4);
    bits |= sign;
    memcpy(&v, &bits, 4);
    return v;
}

uint16_t ref_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00;  /* NaN */
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* ≥ 65520 rounds to infinity */
    if (ax < 0x38800000u) {
        /* Below 2^-14, f16's subnormals count units of 2^-24: scaling by 2^24 is exact, and
         * nearbyintf rounds to nearest even (the default rounding mode). 1024 is 2^-14. */
        float v;
        memcpy(&v, &ax, 4);
        return sign | (uint16_t)nearbyintf(v * 16777216.0f);
    }
    uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffffu) >> 13));
    const uint32_t rest = ax & 0x1fffu; /* the 13 bits dropped */
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; /* a carry may raise the exponent */
    return sign | (uint16_t)h;
}

float ref_bf16_to_f32(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

uint16_t ref_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float ref_load(const void *p, pagoda_dtype_t t, int64_t i) {
    switch (t) {
        case PAGODA_DTYPE_BF16: return ref_bf16_to_f32(((const uint16_t *)p)[i]);
        case PAGODA_DTYPE_F16: return ref_f16_to_f32(((const uint16_t *)p)[i]);
        default: return ((const float *)p)[i];
    }
}

void ref_store(void *p, pagoda_dtype_t t, int64_t i, float v) {
    switch (t) {
        case PAGODA_DTYPE_BF16: ((uint16_t *)p)[i] = ref_f32_to_bf16(v); break;
        case PAGODA_DTYPE_F16: ((uint16_t *)p)[i] = ref_f32_to_f16(v); break;
        default: ((float *)p)[i] = v; break;
    }
}

int ref_is_plain(int64_t t) {
    return t == PAGODA_DTYPE_F32 || t == PAGODA_DTYPE_BF16 || t == PAGODA_DTYPE_F16;
}

int ref_is_block(int64_t t) {
    return t == PAGODA_DTYPE_Q8_0 || t == PAGODA_DTYPE_Q4_0 || t == PAGODA_DTYPE_Q4_K ||
           t == PAGODA_DTYPE_Q5_K || t == PAGODA_DTYPE_Q6_K;
}

int64_t ref_block_values(pagoda_dtype_t t) {
    switch (t) {
        case PAGODA_DTYPE_Q8_0:
        case PAGODA_DTYPE_Q4_0: return 32;
        case PAGODA_DTYPE_Q4_K:
        case PAGODA_DTYPE_Q5_K:
        case PAGODA_DTYPE_Q6_K: return 256;
        case PAGODA_DTYPE_INVALID: return 0;
        default: return t <= PAGODA_DTYPE_U8 ? 1 : 0;
    }
}

int64_t ref_block_bytes(pagoda_dtype_t t) {
    switch (t) {
        case PAGODA_DTYPE_F32:
        case PAGODA_DTYPE_I32: return 4;
        case PAGODA_DTYPE_F16:
        case PAGODA_DTYPE_BF16: return 2;
        case PAGODA_DTYPE_I64: return 8;
        case PAGODA_DTYPE_I8:
        case PAGODA_DTYPE_U8: return 1;
        case PAGODA_DTYPE_Q8_0: return 34;  /* f16 d, 32 × int8 */
        case PAGODA_DTYPE_Q4_0: return 18;  /* f16 d, 16 bytes of nibbles */
        case PAGODA_DTYPE_Q4_K: return 144; /* d, dmin, 12 bytes of scales, 128 of nibbles */
        case PAGODA_DTYPE_Q5_K: return 176; /* Q4_K's and 32 bytes of fifth bits */
        case PAGODA_DTYPE_Q6_K: return 210; /* 128 ql, 64 qh, 16 scales, f16 d */
        default: return 0;
    }
}

int64_t ref_row_bytes(pagoda_dtype_t t, int64_t values) {
    return values / ref_block_values(t) * ref_block_bytes(t);
}

const char *ref_dtype_name(int64_t t) {
    static const char *const names[] = {"invalid", "f32", "f16",  "bf16", "i32", "i64", "i8",
                                        "u8",      "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};
    return t >= 0 && t < (int64_t)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

pagoda_dtype_t ref_act(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : t;
}
