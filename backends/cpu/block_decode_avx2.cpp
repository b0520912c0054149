// AVX2/F16C decoders of the quantized block types (see widen.hpp), for the GEMV's row chunks,
// the GEMM's widened panels and EMBEDDING. Compiled with -mavx2 -mfma -mf16c and also
// -ffp-contract=off: each value is computed with the same roundings, in the same order, as
// the reference decoders (src/formats/block_formats.cpp), so the two agree bit for bit.
// Like every AVX2 file here it shares helpers only with AVX2 files (avx2_helpers.hpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "avx2_helpers.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

// Eight signed bytes (the low 8 of `v`) as floats times `scale`.
inline __m256 scaled_i8(__m128i v, __m256 scale) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), scale);
}

// Sixteen signed bytes as floats times `scale`, to dst[0..16).
inline void store16_i8(__m128i v, __m256 scale, float *dst) {
    _mm256_storeu_ps(dst, scaled_i8(v, scale));
    _mm256_storeu_ps(dst + 8, scaled_i8(_mm_srli_si128(v, 8), scale));
}

// Thirty-two unsigned bytes q as d·q − m, to dst[0..32).
inline void store32_u8_affine(__m256i q, float d, float m, float *dst) {
    const __m256 dv = _mm256_set1_ps(d), mv = _mm256_set1_ps(m);
    const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    for (int h = 0; h < 2; ++h)
        for (int g = 0; g < 2; ++g) {
            const __m128i b = g == 0 ? halves[h] : _mm_srli_si128(halves[h], 8);
            const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
            _mm256_storeu_ps(dst + 16 * h + 8 * g, _mm256_sub_ps(_mm256_mul_ps(dv, v), mv));
        }
}

void q8_0(const unsigned char *block, float *out) {
    const __m256 d = _mm256_set1_ps(half_at(block));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(block + 2));
    store16_i8(_mm256_castsi256_si128(q), d, out);
    store16_i8(_mm256_extracti128_si256(q, 1), d, out + 16);
}

void q4_0(const unsigned char *block, float *out) {
    const __m256 d = _mm256_set1_ps(half_at(block));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 2));
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    store16_i8(_mm_sub_epi8(_mm_and_si128(q, low), eight), d, out);
    store16_i8(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight), d, out + 16);
}

// Q4_K and Q5_K: four pairs of 32-value sub-blocks; Q5_K adds 16 where its qh bit is set.
template <bool FifthBit>
void q45_k(const unsigned char *block, float *out) {
    alignas(32) float scale[8], min[8];
    {
        __m256 sc, mn;
        k_scales_mins(block, &sc, &mn);
        _mm256_store_ps(scale, sc);
        _mm256_store_ps(min, mn);
    }
    const unsigned char *qh = block + 16, *qs = block + (FifthBit ? 48 : 16);
    const __m256i low = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    const __m256i high = FifthBit ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qh))
                                  : _mm256_setzero_si256();
    for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs));
        __m256i a = _mm256_and_si256(q, low), b = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
        if constexpr (FifthBit) {
            const __m256i bit0 = _mm256_set1_epi8(char(1 << (2 * pair)));
            const __m256i bit1 = _mm256_set1_epi8(char(2 << (2 * pair)));
            a = _mm256_add_epi8(
                a, _mm256_and_si256(
                       _mm256_cmpeq_epi8(_mm256_and_si256(high, bit0), bit0), sixteen));
            b = _mm256_add_epi8(
                b, _mm256_and_si256(
                       _mm256_cmpeq_epi8(_mm256_and_si256(high, bit1), bit1), sixteen));
        }
        store32_u8_affine(a, scale[2 * pair], min[2 * pair], out);
        store32_u8_affine(b, scale[2 * pair + 1], min[2 * pair + 1], out + 32);
    }
}

// Q6_K: per half of 128 values, 64 bytes of low nibbles, 32 of 2-bit pairs, 8 scales.
void q6_k(const unsigned char *block, float *out) {
    const unsigned char *ql = block, *qh = block + 128;
    const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
    const float d = half_at(block + 208);
    const __m256i low = _mm256_set1_epi8(0x0F), two_bits = _mm256_set1_epi8(0x30),
                  bias = _mm256_set1_epi8(32);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8, out += 128) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ql));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ql + 32));
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qh));
        // Quarter i takes a nibble of ql and bits 2i, 2i+1 of qh, moved to bits 4-5; 16-bit
        // shifts carry bits across bytes only into positions the masks drop.
        const __m256i q[4] = {
            _mm256_or_si256(_mm256_and_si256(a, low),
                            _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(3)), 4)),
            _mm256_or_si256(_mm256_and_si256(b, low),
                            _mm256_and_si256(_mm256_slli_epi16(h, 2), two_bits)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low),
                            _mm256_and_si256(h, two_bits)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low),
                            _mm256_and_si256(_mm256_srli_epi16(h, 2), two_bits))};
        for (int i = 0; i < 4; ++i) {
            const __m256i v = _mm256_sub_epi8(q[i], bias);
            // Values 0-15 of the quarter use scale 2i, values 16-31 scale 2i+1.
            store16_i8(_mm256_castsi256_si128(v), _mm256_set1_ps(d * float(scales[2 * i])),
                       out + 32 * i);
            store16_i8(_mm256_extracti128_si256(v, 1),
                       _mm256_set1_ps(d * float(scales[2 * i + 1])), out + 32 * i + 16);
        }
    }
}

template <void (*Decode)(const unsigned char *, float *)>
void each_block(const void *src, int64_t blocks, int64_t block_bytes, int64_t block_values,
                float *dst) {
    const auto *p = static_cast<const unsigned char *>(src);
    for (int64_t i = 0; i < blocks; ++i) Decode(p + i * block_bytes, dst + i * block_values);
}

}  // namespace

void decode_blocks_avx2(pagoda_dtype_t dtype, const void *src, int64_t blocks, float *dst) {
    switch (dtype) {
        case PAGODA_DTYPE_Q8_0: return each_block<q8_0>(src, blocks, 34, 32, dst);
        case PAGODA_DTYPE_Q4_0: return each_block<q4_0>(src, blocks, 18, 32, dst);
        case PAGODA_DTYPE_Q4_K: return each_block<q45_k<false>>(src, blocks, 144, 256, dst);
        case PAGODA_DTYPE_Q5_K: return each_block<q45_k<true>>(src, blocks, 176, 256, dst);
        case PAGODA_DTYPE_Q6_K: return each_block<q6_k>(src, blocks, 210, 256, dst);
        default: return;
    }
}

}  // namespace pagoda::cpu
