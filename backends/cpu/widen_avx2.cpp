// AVX2/F16C builds of widen_to_f32 and narrow_from_f32 (see widen.hpp); compiled with -mavx2 -mfma -mf16c, so it
// uses no shared inline helpers that the linker could merge into portable code.
#include <immintrin.h>

#include <cstdint>

#include "widen.hpp"

namespace pagoda::cpu {

void widen_to_f32_avx2(const void *src, pagoda_dtype_t dtype, int64_t n, float *dst) {
    const auto *h = static_cast<const uint16_t *>(src);
    int64_t i = 0;
    if (dtype == PAGODA_DTYPE_BF16) {
        for (; i + 8 <= n; i += 8) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i));
            _mm256_storeu_ps(dst + i,
                             _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)));
        }
        for (; i < n; ++i) {
            const uint32_t u = uint32_t(h[i]) << 16;
            __builtin_memcpy(dst + i, &u, sizeof u);
        }
    } else if (dtype == PAGODA_DTYPE_F16) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(
                dst + i,
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i))));
        for (; i < n; ++i) dst[i] = _cvtsh_ss(h[i]);
    } else {
        const auto *f = static_cast<const float *>(src);
        for (; i < n; ++i) dst[i] = f[i];
    }
}

namespace {

// Eight f32 to bf16, rounding to nearest even; a NaN stays a quiet NaN (half.hpp's f32_to_bf16).
__m128i f32_to_bf16_x8(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // Every lane fits 16 bits, so the unsigned saturating pack is exact; it packs within
    // 128-bit halves, so the two halves' results are joined from the low quadwords.
    const __m256i packed = _mm256_packus_epi32(r, r);
    return _mm_unpacklo_epi64(_mm256_castsi256_si128(packed),
                              _mm256_extracti128_si256(packed, 1));
}

}  // namespace

void narrow_from_f32_avx2(const float *src, pagoda_dtype_t dtype, int64_t n, void *dst) {
    auto *h = static_cast<uint16_t *>(dst);
    int64_t i = 0;
    if (dtype == PAGODA_DTYPE_BF16) {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(h + i),
                             f32_to_bf16_x8(_mm256_loadu_ps(src + i)));
        if (i < n) {  // the last 1–7 through one zero-padded vector
            alignas(32) float tail[8] = {};
            alignas(16) uint16_t out[8];
            __builtin_memcpy(tail, src + i, size_t(n - i) * sizeof(float));
            _mm_store_si128(reinterpret_cast<__m128i *>(out), f32_to_bf16_x8(_mm256_load_ps(tail)));
            __builtin_memcpy(h + i, out, size_t(n - i) * sizeof(uint16_t));
        }
    } else if (dtype == PAGODA_DTYPE_F16) {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(h + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
        for (; i < n; ++i) h[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
    } else {
        auto *f = static_cast<float *>(dst);
        for (; i < n; ++i) f[i] = src[i];
    }
}

}  // namespace pagoda::cpu
