// AVX-512 build of the 32-value int8 route (gemv_q8x.hpp) for Q8_0 W, on processors with
// AVX-512 BW, VL and VNNI (CpuFeatures::avx512_vnni). Built with those flags and called only
// when cpuid and the OS have them.
//
// Two blocks per 64-byte register. `dpbusd` takes its first operand unsigned, so it gets |w|
// and x carries w's sign (a masked negation), and it sums four products per int32 lane: lanes
// 0-7 hold the first block's sums, 8-15 the second's, which one multiply-add by the two blocks'
// scale products takes into f32. Each pair of W blocks is loaded and made unsigned once for up
// to eight x rows. The AVX2 build spends two sign moves, a maddubs and a madd where this spends
// one masked subtraction and a dpbusd, per block and row.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "gemv_q8x.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

constexpr int64_t kQ8_0Bytes = 34;

// {a ×8, b ×8} from the two floats at `ab`.
inline __m512 pair_spread(__m128 ab) {
    const __m512i index = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(index, _mm512_castps128_ps512(ab));
}

// W row `w` (Q8_0) against x rows i0 .. i0+G: the dot products in f32, into `dot`.
template <int G>
void row_dots(const unsigned char *w, const Q8Rows &x, int64_t i0, float *dot) {
    constexpr int64_t kAhead = 2048;
    const int64_t runs = x.k / kQ8Run;
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    const __m512i zero = _mm512_setzero_si512();
    int64_t b = 0;
    for (; b + 2 <= runs; b += 2, w += 2 * kQ8_0Bytes) {
        _mm_prefetch(reinterpret_cast<const char *>(w) + kAhead, _MM_HINT_T0);
        const __m512i wv = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 2))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + kQ8_0Bytes + 2)), 1);
        const __m512i w_abs = _mm512_abs_epi8(wv);
        const __mmask64 negative = _mm512_movepi8_mask(wv);
        uint16_t h[2];
        std::memcpy(&h[0], w, 2);
        std::memcpy(&h[1], w + kQ8_0Bytes, 2);
        const __m128 dw = _mm_cvtph_ps(_mm_cvtsi32_si128(int(uint32_t(h[0]) | uint32_t(h[1]) << 16)));
        for (int g = 0; g < G; ++g) {
            const int8_t *xq = x.q + (i0 + g) * x.k + b * kQ8Run;
            const __m512i xv = _mm512_loadu_si512(xq);
            const __m512i x_signed = _mm512_mask_sub_epi8(xv, negative, zero, xv);
            const __m512i sums = _mm512_dpbusd_epi32(zero, w_abs, x_signed);
            // The two blocks' x scales, through __m128i (an unaligned type that may alias them).
            const __m128 dx = _mm_castsi128_ps(_mm_loadl_epi64(
                reinterpret_cast<const __m128i *>(x.scale + (i0 + g) * runs + b)));
            acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), pair_spread(_mm_mul_ps(dw, dx)), acc[g]);
        }
    }
    float tail[G] = {};
    if (b < runs) {  // an odd last block, in 256 bits
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 2));
        const __m256i w_abs = _mm256_abs_epi8(wv);
        uint16_t h;
        std::memcpy(&h, w, 2);
        const float dw = _cvtsh_ss(h);
        for (int g = 0; g < G; ++g) {
            const __m256i xv = _mm256_loadu_si256(
                reinterpret_cast<const __m256i *>(x.q + (i0 + g) * x.k + b * kQ8Run));
            const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(xv, wv));
            alignas(32) int32_t lanes[8];
            _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), sums);
            int32_t total = 0;
            for (int l = 0; l < 8; ++l) total += lanes[l];
            tail[g] = dw * x.scale[(i0 + g) * runs + b] * float(total);
        }
    }
    for (int g = 0; g < G; ++g) dot[g] = _mm512_reduce_add_ps(acc[g]) + tail[g];
}

}  // namespace

void gemv_q8x_avx512(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end) {
    rows_in_groups<8>(p, row_begin, row_end, [&](auto size, const unsigned char *w, int64_t i0, float *dot) {
        row_dots<decltype(size)::value>(w, x, i0, dot);
    });
}

}  // namespace pagoda::cpu
