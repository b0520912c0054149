#include "model/quantize_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "model/quant_blocks.hpp"

namespace pagoda::model {

namespace {

constexpr float kHalfMax = 65504.0f;  // the largest finite half: scales are clamped to it

// `v` rounded to a half (clamped to the finite ones), stored at `dst`; returns the value the
// decoder will read back.
float store_half(float v, unsigned char *dst) {
    const uint16_t h = float_to_half(std::clamp(v, -kHalfMax, kHalfMax));
    std::memcpy(dst, &h, 2);
    return half_to_float(h);
}

int clamp_round(float v, int lo, int hi) {
    return std::clamp(int(std::lrintf(v)), lo, hi);
}

// ---- Q8_0 and Q4_0: one f16 scale per 32 values ------------------------------------------

void encode_q8_0(const float *x, unsigned char *block) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = store_half(amax / 127.0f, block);
    const float inv = d != 0 ? 1.0f / d : 0.0f;
    for (int i = 0; i < 32; ++i) block[2 + i] = (unsigned char)int8_t(clamp_round(x[i] * inv, -127, 127));
}

// The value of largest magnitude maps to -8, so the 16 levels reach one step further on the
// other side of zero.
void encode_q4_0(const float *x, unsigned char *block) {
    float extreme = 0;
    for (int i = 0; i < 32; ++i)
        if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
    const float d = store_half(extreme / -8.0f, block);
    const float inv = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j) {
        const int lo = clamp_round(x[j] * inv, -8, 7) + 8, hi = clamp_round(x[j + 16] * inv, -8, 7) + 8;
        block[2 + j] = (unsigned char)(lo | (hi << 4));
    }
}

// ---- fits of one sub-block ------------------------------------------------------------------

// Squared error of x ≈ scale·clamp(round((x - offset)/scale), 0, levels) + offset.
float affine_error(const float *x, int n, int levels, float scale, float offset) {
    float err = 0;
    for (int i = 0; i < n; ++i) {
        const int q = clamp_round((x[i] - offset) / scale, 0, levels);
        const float e = scale * float(q) + offset - x[i];
        err += e * e;
    }
    return err;
}

struct Affine {
    float scale;  // ≥ 0
    float min;    // ≥ 0: the value is scale·q - min
};

// x ≈ scale·q - min with q in 0..levels, the K types' asymmetric sub-blocks: from several
// starting scales around the range over the levels, alternate rounding with a least-squares
// solve for (scale, offset), the offset kept at or below zero (the format stores -offset as an
// unsigned min), and keep the fit of least squared error.
Affine fit_affine(const float *x, int n, int levels) {
    float lo = 0, hi = x[0];
    for (int i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    if (hi <= lo) return {0.0f, -lo};
    Affine best{(hi - lo) / float(levels), -lo};
    float best_err = affine_error(x, n, levels, best.scale, lo);
    for (int start = -2; start <= 2; ++start) {
        float scale = (hi - lo) / (float(levels) + 0.3f * float(start)), offset = lo;
        for (int iter = 0; iter < 3; ++iter) {
            double sq = 0, sqq = 0, sx = 0, sxq = 0;
            for (int i = 0; i < n; ++i) {
                const double q = clamp_round((x[i] - offset) / scale, 0, levels);
                sq += q, sqq += q * q, sx += x[i], sxq += x[i] * q;
            }
            const double det = n * sqq - sq * sq;
            if (det <= 0) break;
            double s = (n * sxq - sq * sx) / det, o = (sx - s * sq) / n;
            if (o > 0) o = 0, s = sqq > 0 ? sxq / sqq : 0;
            if (s <= 0) break;
            scale = float(s), offset = float(o);
            const float err = affine_error(x, n, levels, scale, offset);
            if (err < best_err) best_err = err, best = {scale, -offset};
        }
    }
    return best;
}

// Squared error of x ≈ scale·clamp(round(x/scale), -32, 31).
float symmetric_error(const float *x, int n, float scale) {
    float err = 0;
    for (int i = 0; i < n; ++i) {
        const float e = scale * float(clamp_round(x[i] / scale, -32, 31)) - x[i];
        err += e * e;
    }
    return err;
}

// x ≈ scale·q with q in -32..31 (Q6_K's sub-blocks): the value of largest magnitude maps near
// -32 (the longer side), refined by least squares as fit_affine does.
float fit_symmetric(const float *x, int n) {
    float extreme = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
    if (extreme == 0) return 0;
    float best = extreme / -32.0f, best_err = symmetric_error(x, n, best);
    for (int start = -2; start <= 2; ++start) {
        float scale = extreme / -(32.0f + 0.3f * float(start));
        for (int iter = 0; iter < 2; ++iter) {
            double sxq = 0, sqq = 0;
            for (int i = 0; i < n; ++i) {
                const double q = clamp_round(x[i] / scale, -32, 31);
                sxq += x[i] * q, sqq += q * q;
            }
            if (sqq == 0 || sxq == 0) break;
            scale = float(sxq / sqq);
            const float err = symmetric_error(x, n, scale);
            if (err < best_err) best_err = err, best = scale;
        }
    }
    return best;
}

// ---- Q4_K and Q5_K: 8 sub-blocks of 32, 6-bit scales and mins under f16 d and dmin ----------

// Fits the 8 sub-blocks, stores d, dmin and the packed 6-bit scales and mins (the layout
// quant_blocks.cpp's scale_and_min reads) in the first 16 bytes of `block`, and returns each
// sub-block's decoded scale and min.
void encode_k_scales(const float *x, int levels, unsigned char *block, float scale[8], float min[8]) {
    Affine fit[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        fit[j] = fit_affine(x + 32 * j, 32, levels);
        max_scale = std::max(max_scale, fit[j].scale);
        max_min = std::max(max_min, fit[j].min);
    }
    const float d = store_half(max_scale / 63.0f, block), dmin = store_half(max_min / 63.0f, block + 2);
    unsigned char *packed = block + 4;
    std::memset(packed, 0, 12);
    for (int j = 0; j < 8; ++j) {
        const int ls = d > 0 ? clamp_round(fit[j].scale / d, 0, 63) : 0;
        const int lm = dmin > 0 ? clamp_round(fit[j].min / dmin, 0, 63) : 0;
        if (j < 4) {
            packed[j] |= (unsigned char)ls;
            packed[j + 4] |= (unsigned char)lm;
        } else {
            packed[j + 4] = (unsigned char)((ls & 0x0F) | ((lm & 0x0F) << 4));
            packed[j - 4] |= (unsigned char)((ls >> 4) << 6);
            packed[j] |= (unsigned char)((lm >> 4) << 6);
        }
        scale[j] = d * float(ls);
        min[j] = dmin * float(lm);
    }
}

// The levels of each value under its sub-block's decoded scale and min.
void k_levels(const float *x, int levels, const float scale[8], const float min[8], uint8_t q[256]) {
    for (int j = 0; j < 8; ++j)
        for (int l = 0; l < 32; ++l)
            q[32 * j + l] = scale[j] > 0 ? uint8_t(clamp_round((x[32 * j + l] + min[j]) / scale[j], 0, levels)) : 0;
}

void encode_q4_k(const float *x, unsigned char *block) {
    float scale[8], min[8];
    uint8_t q[256];
    encode_k_scales(x, 15, block, scale, min);
    k_levels(x, 15, scale, min, q);
    unsigned char *qs = block + 16;
    for (int pair = 0; pair < 4; ++pair)
        for (int l = 0; l < 32; ++l)
            qs[32 * pair + l] = (unsigned char)(q[64 * pair + l] | (q[64 * pair + 32 + l] << 4));
}

void encode_q5_k(const float *x, unsigned char *block) {
    float scale[8], min[8];
    uint8_t q[256];
    encode_k_scales(x, 31, block, scale, min);
    k_levels(x, 31, scale, min, q);
    unsigned char *qh = block + 16, *qs = block + 48;
    std::memset(qh, 0, 32);
    for (int pair = 0; pair < 4; ++pair)
        for (int l = 0; l < 32; ++l) {
            const uint8_t a = q[64 * pair + l], b = q[64 * pair + 32 + l];
            qs[32 * pair + l] = (unsigned char)((a & 0x0F) | ((b & 0x0F) << 4));
            qh[l] |= (unsigned char)(((a >> 4) << (2 * pair)) | ((b >> 4) << (2 * pair + 1)));
        }
}

// ---- Q6_K: 16 sub-blocks of 16, int8 scales under one f16 d -----------------------------------

void encode_q6_k(const float *x, unsigned char *block) {
    float fit[16], extreme = 0;
    for (int j = 0; j < 16; ++j) {
        fit[j] = fit_symmetric(x + 16 * j, 16);
        if (std::fabs(fit[j]) > std::fabs(extreme)) extreme = fit[j];
    }
    // The scale of largest magnitude maps to -128, as the values to -32.
    unsigned char *ql = block, *qh = block + 128;
    auto *scales = reinterpret_cast<int8_t *>(block + 192);
    const float d = store_half(extreme / -128.0f, block + 208);
    uint8_t q[256];
    for (int j = 0; j < 16; ++j) {
        scales[j] = int8_t(d != 0 ? clamp_round(fit[j] / d, -128, 127) : 0);
        const float s = d * float(scales[j]);
        for (int l = 0; l < 16; ++l)
            q[16 * j + l] = uint8_t((s != 0 ? clamp_round(x[16 * j + l] / s, -32, 31) : 0) + 32);
    }
    std::memset(qh, 0, 64);
    for (int half = 0; half < 2; ++half) {
        const uint8_t *v = q + 128 * half;
        unsigned char *lo = ql + 64 * half, *hi = qh + 32 * half;
        for (int l = 0; l < 32; ++l) {
            lo[l] = (unsigned char)((v[l] & 0x0F) | ((v[l + 64] & 0x0F) << 4));
            lo[l + 32] = (unsigned char)((v[l + 32] & 0x0F) | ((v[l + 96] & 0x0F) << 4));
            hi[l] = (unsigned char)((v[l] >> 4) | ((v[l + 32] >> 4) << 2) | ((v[l + 64] >> 4) << 4) |
                                    ((v[l + 96] >> 4) << 6));
        }
    }
}

using BlockEncoder = void (*)(const float *x, unsigned char *block);

BlockEncoder encoder_of(TensorType t) {
    switch (t) {
    case TensorType::Q4_0: return encode_q4_0;
    case TensorType::Q8_0: return encode_q8_0;
    case TensorType::Q4_K: return encode_q4_k;
    case TensorType::Q5_K: return encode_q5_k;
    case TensorType::Q6_K: return encode_q6_k;
    default: return nullptr;
    }
}

}  // namespace

uint16_t float_to_half(float v) {
    uint32_t x;
    std::memcpy(&x, &v, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    x &= 0x7fffffff;
    if (x > 0x7f800000) return sign | 0x7e00;  // NaN
    if (x >= 0x477ff000) return sign | 0x7c00;  // 65520 and up round to infinity
    if (x < 0x38800000) {
        // Below 2^-14: a subnormal half, in units of 2^-24 (exact scaling, then round to even).
        float a;
        std::memcpy(&a, &x, 4);
        return sign | uint16_t(std::nearbyint(a * 16777216.0f));
    }
    uint32_t h = ((x >> 23) - 112) << 10 | ((x >> 13) & 0x3ff);  // rebias 127 -> 15
    const uint32_t rest = x & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent
    return sign | uint16_t(h);
}

void quantize(TensorType t, const float *src, uint64_t elements, void *dst) {
    const BlockEncoder encode = encoder_of(t);
    if (encode == nullptr)
        throw Error(PAGODA_ERR_INTERNAL, std::string("quantize: ") + tensor_type_name(t) +
                                             " is not a quantized type");
    for (uint64_t i = 0; i < elements; ++i)
        if (!std::isfinite(src[i]))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "quantize: value " + std::to_string(i) +
                                                         " is not finite (" + std::to_string(src[i]) + ")");
    const BlockLayout b = block_layout(t);
    auto *block = static_cast<unsigned char *>(dst);
    for (uint64_t i = 0; i < elements / b.elements; ++i, block += b.bytes, src += b.elements)
        encode(src, block);
}

}  // namespace pagoda::model
