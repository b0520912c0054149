// The AVX2/FMA soft-capping loop (softcap.hpp). Compiled with -mavx2 -mfma -mf16c, so its
// helpers have internal linkage (avx2_helpers.hpp).
#include <immintrin.h>

#include <cstdint>

#include "avx2_helpers.hpp"
#include "softcap.hpp"

namespace pagoda::cpu {

namespace {

// tanh of eight lanes. Below |x| = 0.25 its odd Taylor series to x⁹ (the next term is under
// 1e-8 relative there); above, (1 − e)/(1 + e) with e = e^(−2|x|), where (1 − e) no longer
// cancels and exp8's 2e-7 relative error moves the result by at most 2e-7 · 2e/(1 + e)² ≤ 1e-7.
// The sign is put back last; NaN lanes pass through (exp8 would clamp them).
__m256 tanh8(__m256 x) {
    const __m256 sign_bit = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 ax = _mm256_andnot_ps(sign_bit, x);
    const __m256 e = exp8(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
    const __m256 large = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    // tanh x = x − x³/3 + 2x⁵/15 − 17x⁷/315 + 62x⁹/2835 − …
    const __m256 x2 = _mm256_mul_ps(ax, ax);
    __m256 p = _mm256_set1_ps(62.0f / 2835.0f);
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.0f / 315.0f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.0f / 15.0f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.0f / 3.0f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), ax, ax);
    __m256 t = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.25f), _CMP_LT_OQ));
    t = _mm256_or_ps(t, _mm256_and_ps(x, sign_bit));
    return _mm256_blendv_ps(t, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

}  // namespace

void softcap_f32_avx2(float *v, int64_t n, float cap) {
    const __m256 vcap = _mm256_set1_ps(cap);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_div_ps(_mm256_loadu_ps(v + i), vcap);
        _mm256_storeu_ps(v + i, _mm256_mul_ps(vcap, tanh8(x)));
    }
    if (i == n) return;
    // The tail through the same vector code, so every element is capped the same way.
    alignas(32) float tail[8] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = v[j];
    const __m256 x = _mm256_div_ps(_mm256_load_ps(tail), vcap);
    _mm256_store_ps(tail, _mm256_mul_ps(vcap, tanh8(x)));
    for (int64_t j = i; j < n; ++j) v[j] = tail[j - i];
}

}  // namespace pagoda::cpu
