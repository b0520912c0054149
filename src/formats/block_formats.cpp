#include "block_formats.hpp"

#include <cmath>
#include <cstring>

// The decoders evaluate each value as ggml's do, operation for operation in f32 (this file is
// built with -ffp-contract=off so that no multiply-add is fused), which makes them bit-exact.

namespace pagoda::formats {

namespace {

constexpr int64_t kSuperBlock = 256;  // the K types' block: 8 sub-blocks of 32 or 16 of 16

uint16_t read_u16(const unsigned char *p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Q4_0: f16 scale d, then 16 bytes of 4-bit values q (low nibbles are values 0-15, high nibbles
// 16-31); value = d · (q - 8).
void decode_q4_0(const unsigned char *block, float *out) {
    const float d = half_bits_to_float(read_u16(block));
    const unsigned char *qs = block + 2;
    for (int j = 0; j < 16; ++j) {
        out[j] = float((qs[j] & 0x0F) - 8) * d;
        out[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
}

// Q8_0: f16 scale d, then 32 int8 q; value = d · q.
void decode_q8_0(const unsigned char *block, float *out) {
    const float d = half_bits_to_float(read_u16(block));
    const auto *qs = reinterpret_cast<const int8_t *>(block + 2);
    for (int j = 0; j < 32; ++j) out[j] = float(qs[j]) * d;
}

// Q4_K: f16 d and dmin, 12 bytes of packed scales/mins, 128 bytes of 4-bit values. Each 64
// values share 32 bytes: low nibbles are the first sub-block, high nibbles the second; value =
// d·scale · q - dmin·min.
void decode_q4_k(const unsigned char *block, float *out) {
    const float d = half_bits_to_float(read_u16(block));
    const float dmin = half_bits_to_float(read_u16(block + 2));
    const unsigned char *scales = block + 4, *qs = block + 16;
    for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
        float s0, m0, s1, m1;
        scale_and_min(scales, 2 * pair, &s0, &m0);
        scale_and_min(scales, 2 * pair + 1, &s1, &m1);
        const float d0 = d * s0, min0 = dmin * m0, d1 = d * s1, min1 = dmin * m1;
        for (int l = 0; l < 32; ++l) out[l] = d0 * float(qs[l] & 0x0F) - min0;
        for (int l = 0; l < 32; ++l) out[l + 32] = d1 * float(qs[l] >> 4) - min1;
    }
}

// Q5_K: as Q4_K with a fifth bit per value: 32 bytes qh whose bit 2·pair (first sub-block of
// the pair) and 2·pair+1 (second) add 16 to value l of that sub-block.
void decode_q5_k(const unsigned char *block, float *out) {
    const float d = half_bits_to_float(read_u16(block));
    const float dmin = half_bits_to_float(read_u16(block + 2));
    const unsigned char *scales = block + 4, *qh = block + 16, *qs = block + 48;
    for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
        float s0, m0, s1, m1;
        scale_and_min(scales, 2 * pair, &s0, &m0);
        scale_and_min(scales, 2 * pair + 1, &s1, &m1);
        const float d0 = d * s0, min0 = dmin * m0, d1 = d * s1, min1 = dmin * m1;
        const unsigned bit0 = 1u << (2 * pair), bit1 = 2u << (2 * pair);
        for (int l = 0; l < 32; ++l)
            out[l] = d0 * float((qs[l] & 0x0F) + ((qh[l] & bit0) ? 16 : 0)) - min0;
        for (int l = 0; l < 32; ++l)
            out[l + 32] = d1 * float((qs[l] >> 4) + ((qh[l] & bit1) ? 16 : 0)) - min1;
    }
}

// Q6_K: 128 bytes of low nibbles ql, 64 bytes of high 2-bit pairs qh, 16 int8 scales (one per
// 16 values), then f16 d; value = d·scale · (q - 32) with q 6 bits. Each half of 128 values
// reads 64 ql bytes and 32 qh bytes: value l of each quarter takes ql[l] or ql[l+32] (low or
// high nibble) and 2 bits of qh[l].
void decode_q6_k(const unsigned char *block, float *out) {
    const unsigned char *ql = block, *qh = block + 128;
    const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
    const float d = half_bits_to_float(read_u16(block + 208));
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8, out += 128) {
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;
            const int q0 = int((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q1 = int((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q2 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q3 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * float(scales[s]) * float(q0);
            out[l + 32] = d * float(scales[s + 2]) * float(q1);
            out[l + 64] = d * float(scales[s + 4]) * float(q2);
            out[l + 96] = d * float(scales[s + 6]) * float(q3);
        }
    }
}

using BlockDecoder = void (*)(const unsigned char *block, float *out);

BlockDecoder decoder_of(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_Q4_0: return decode_q4_0;
        case PAGODA_DTYPE_Q8_0: return decode_q8_0;
        case PAGODA_DTYPE_Q4_K: return decode_q4_k;
        case PAGODA_DTYPE_Q5_K: return decode_q5_k;
        case PAGODA_DTYPE_Q6_K: return decode_q6_k;
        default: return nullptr;
    }
}

}  // namespace

// Q4_K and Q5_K pack 8 six-bit scales and 8 six-bit mins in 12 bytes: sub-blocks 0-3 in the
// low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11,
// with their top 2 bits in the spare high bits of bytes 0-3 (scales) and 4-7 (mins).
void scale_and_min(const unsigned char *packed, int sub, float *scale, float *min) {
    if (sub < 4) {
        *scale = float(packed[sub] & 63);
        *min = float(packed[sub + 4] & 63);
    } else {
        *scale = float((packed[sub + 4] & 0x0F) | ((packed[sub - 4] >> 6) << 4));
        *min = float((packed[sub + 4] >> 4) | ((packed[sub] >> 6) << 4));
    }
}

BlockShape block_shape(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_F32: return {1, 4};
        case PAGODA_DTYPE_F16: return {1, 2};
        case PAGODA_DTYPE_BF16: return {1, 2};
        case PAGODA_DTYPE_I32: return {1, 4};
        case PAGODA_DTYPE_I64: return {1, 8};
        case PAGODA_DTYPE_I8: return {1, 1};
        case PAGODA_DTYPE_U8: return {1, 1};
        case PAGODA_DTYPE_Q8_0: return {32, 34};
        case PAGODA_DTYPE_Q4_0: return {32, 18};
        case PAGODA_DTYPE_Q4_K: return {kSuperBlock, 144};
        case PAGODA_DTYPE_Q5_K: return {kSuperBlock, 176};
        case PAGODA_DTYPE_Q6_K: return {kSuperBlock, 210};
        case PAGODA_DTYPE_INVALID: break;
    }
    return {0, 0};
}

bool is_block_dtype(pagoda_dtype_t dtype) { return decoder_of(dtype) != nullptr; }

float half_bits_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(float(mant), -24);
    else if (exp == 31)
        v = mant != 0 ? NAN : INFINITY;
    else
        v = std::ldexp(float(mant | 0x400), int(exp) - 25);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits |= sign;
    std::memcpy(&v, &bits, 4);
    return v;
}

void decode_blocks(pagoda_dtype_t dtype, const void *src, int64_t blocks, float *dst) {
    const BlockDecoder decode = decoder_of(dtype);
    if (decode == nullptr) return;
    const BlockShape b = block_shape(dtype);
    const auto *block = static_cast<const unsigned char *>(src);
    for (int64_t i = 0; i < blocks; ++i, block += b.bytes, dst += b.elements) decode(block, dst);
}

}  // namespace pagoda::formats
