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
