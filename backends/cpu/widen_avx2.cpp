// AVX2/F16C build of widen_to_f32 (see widen.hpp); compiled with -mavx2 -mfma -mf16c, so it
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

}  // namespace pagoda::cpu
