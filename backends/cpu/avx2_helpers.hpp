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

// Q4_K/Q5_K's packed 6-bit scale and min of sub-block `sub`, as the reference decoders
// (src/formats/block_formats.cpp) unpack them.
inline void scale_and_min(const unsigned char *packed, int sub, float *scale, float *min) {
    if (sub < 4) {
        *scale = float(packed[sub] & 63);
        *min = float(packed[sub + 4] & 63);
    } else {
        *scale = float((packed[sub + 4] & 0x0F) | ((packed[sub - 4] >> 6) << 4));
        *min = float((packed[sub + 4] >> 4) | ((packed[sub] >> 6) << 4));
    }
}

}  // namespace
}  // namespace pagoda::cpu
