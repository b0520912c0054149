// Small helpers the AVX2 kernel files share. Include this only from *_avx2.cpp files (built
// with -mavx2 -mfma -mf16c): everything here has internal linkage, so no copy compiled with
// AVX2 can stand in for portable code at link time.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace pagoda::cpu {
namespace {

// The sum of the eight lanes.
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// e^x for x ≤ 0 (softmax weights, softcap's tanh): e^x = 2^k · e^f with k = round(x / ln 2) and |f| ≤ ln2 / 2,
// e^f by its Taylor polynomial to degree 6 (truncation below 2e-7 relative). Inputs below −87
// are clamped, giving ~1e-38 instead of 0, which no sum of weights (nor 1 ± e^x) can notice.
inline __m256 exp8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // ln 2 split in two so that k · ln2_hi is exact (Cody and Waite).
    __m256 f = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
    f = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), f);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i two_k =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_k));
}

// The f16 at `p` (a block's scale; any alignment) as a float.
inline float half_at(const unsigned char *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// A Q4_K/Q5_K block's eight 6-bit sub-block scales (bytes 0-7) and mins (bytes 8-15), as
// block_formats.cpp's scale_and_min gives them one at a time: sub-blocks 0-3 keep their 6 bits
// in bytes 4-7 (scales) and 8-11 (mins), sub-blocks 4-7 take 4 bits from bytes 12-15 and their
// top 2 from the tops of bytes 4-7 and 8-11.
inline __m128i k_scale_min_bytes(const unsigned char *block) {
    uint32_t u[3];
    std::memcpy(u, block + 4, 12);
    const uint32_t scales_low = u[0] & 0x3F3F3F3Fu, mins_low = u[1] & 0x3F3F3F3Fu;
    const uint32_t scales_high = (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    const uint32_t mins_high = ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    return _mm_set_epi32(int(mins_high), int(mins_low), int(scales_high), int(scales_low));
}

// The same block's eight scales d·sc and mins dmin·m in f32, all at once. Unpacking them one at
// a time cost more per W row than the block's products on int8 activations.
inline void k_scales_mins(const unsigned char *block, __m256 *scale, __m256 *min) {
    const __m128i bytes = k_scale_min_bytes(block);
    *scale = _mm256_mul_ps(_mm256_set1_ps(half_at(block)),
                           _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
    *min = _mm256_mul_ps(_mm256_set1_ps(half_at(block + 2)),
                         _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8))));
}

}  // namespace
}  // namespace pagoda::cpu
