// AVX-512 build of the whole-block int8 route (gemv_q8k.hpp), for processors with AVX-512 BW,
// VL and VNNI (CpuFeatures::avx512_vnni). Built with those flags and called only when cpuid
// and the OS have them.
//
// The arithmetic is gemv_q8k_avx2.cpp's, two runs at a time: a 64-byte register holds two runs
// of W, `maddubs` makes their 32 int16 pair sums, and one `dpwssd` multiplies them by the runs'
// scales (spread by a `permutexvar`) and adds them to the block's int32 sum. Twice the values
// per instruction, and one instruction fewer per run.
#include <immintrin.h>

#include <algorithm>

#include "avx2_helpers.hpp"
#include "gemv_q8k.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

// Two runs' sum into the block's: W's unsigned bytes times x's 64 bytes, times `scales`.
inline __m512i add_runs(__m512i sum, __m512i w, const int8_t *x, __m512i scales) {
    const __m512i xv = _mm512_loadu_si512(x);
    return _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(w, xv), scales);
}

// Two 32-byte halves as one register.
inline __m512i join(__m256i low, __m256i high) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

// The int16 lanes of the scales that a pair of runs' 32 pair sums meet: lanes 0-7 (values
// 0-15 of the first run) take scale a, 8-15 b, 16-23 c, 24-31 d.
inline __m512i spread(__m512i scales, int a, int b, int c, int d) {
    constexpr long long kEach = 0x0001000100010001LL;  // an int16 value in 4 lanes
    const __m512i index = _mm512_set_epi64(d * kEach, d * kEach, c * kEach, c * kEach, b * kEach,
                                           b * kEach, a * kEach, a * kEach);
    return _mm512_permutexvar_epi16(index, scales);
}

// A block's sums against G x rows (gemv_q8k_avx2.cpp's BlockSums): `products[g]` over 16
// int32 lanes, `mins[g]` over 8.
template <int G>
struct BlockSums {
    __m512i products[G];
    __m256i mins[G];
};

// Q4_K and Q5_K: runs 2p and 2p + 1 share the 32 bytes of pair p (low nibbles, then high).
template <bool kFifthBit, int G>
void k_mins_sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
                 BlockSums<G> &out) {
    const __m128i scale_min = k_scale_min_bytes(b);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scale_min, scale_min));
    for (int g = 0; g < G; ++g) {
        out.mins[g] = _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xs[g])));
        out.products[g] = _mm512_setzero_si512();
    }
    const __m512i scales = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scale_min));
    const unsigned char *qs = b + (kFifthBit ? 48 : 16);
    const __m512i low4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
    // Q5_K's fifth bits: qh for the pair's first run, qh >> 1 for its second; bit 2p then.
    __m512i qh = _mm512_setzero_si512();
    if constexpr (kFifthBit) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 16));
        qh = join(bits, _mm256_srli_epi16(bits, 1));
    }
    for (int pair = 0; pair < 4; ++pair) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs + 32 * pair));
        __m512i w = _mm512_and_si512(join(bits, _mm256_srli_epi16(bits, 4)), low4);
        if constexpr (kFifthBit) {
            w = _mm512_or_si512(w, _mm512_slli_epi16(_mm512_and_si512(qh, one), 4));
            qh = _mm512_srli_epi16(qh, 2);
        }
        const int t = 2 * pair;
        const __m512i s = spread(scales, t, t, t + 1, t + 1);
        for (int g = 0; g < G; ++g) out.products[g] = add_runs(out.products[g], w, xq[g] + 32 * t, s);
    }
}

// Q6_K: in half h, runs 4h and 4h + 1 take the low nibbles of its 64 ql bytes, runs 4h + 2
// and 4h + 3 the high ones; qh's bit pairs 0, 1, 2, 3 go to runs 4h .. 4h + 3.
template <int G>
void q6_k_sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
               BlockSums<G> &out) {
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 192)));
    for (int g = 0; g < G; ++g) {
        const __m256i xsum = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xs[g]));
        out.mins[g] = _mm256_setzero_si256();
        // Starts at −32 · Σ sc_g · xsum_g, exactly, in the low 8 lanes.
        const __m256i offsets = _mm256_slli_epi32(_mm256_madd_epi16(sc, xsum), 5);
        out.products[g] = _mm512_inserti64x4(_mm512_setzero_si512(),
                                             _mm256_sub_epi32(_mm256_setzero_si256(), offsets), 0);
    }
    const __m512i scales = _mm512_castsi256_si512(sc);
    const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
        const __m512i ql = _mm512_loadu_si512(b + 64 * half);
        const __m256i qh_bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 128 + 32 * half));
        const __m512i qh = join(qh_bits, _mm256_srli_epi16(qh_bits, 2));
        const __m512i w01 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                            _mm512_slli_epi16(_mm512_and_si512(qh, low2), 4));
        const __m512i w23 = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 4), low2), 4));
        const int s0 = 8 * half;
        const __m512i sc01 = spread(scales, s0, s0 + 1, s0 + 2, s0 + 3);
        const __m512i sc23 = spread(scales, s0 + 4, s0 + 5, s0 + 6, s0 + 7);
        const int t = 4 * half;
        for (int g = 0; g < G; ++g) {
            out.products[g] = add_runs(out.products[g], w01, xq[g] + 32 * t, sc01);
            out.products[g] = add_runs(out.products[g], w23, xq[g] + 32 * (t + 2), sc23);
        }
    }
}

struct Q4_K {
    static constexpr int64_t kBytes = 144;
    static constexpr bool kMins = true;
    static float d(const unsigned char *b) { return half_at(b); }
    static float dmin(const unsigned char *b) { return half_at(b + 2); }
    template <int G>
    static void sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
                     BlockSums<G> &out) {
        k_mins_sums<false, G>(b, xq, xs, out);
    }
};

struct Q5_K {
    static constexpr int64_t kBytes = 176;
    static constexpr bool kMins = true;
    static float d(const unsigned char *b) { return half_at(b); }
    static float dmin(const unsigned char *b) { return half_at(b + 2); }
    template <int G>
    static void sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
                     BlockSums<G> &out) {
        k_mins_sums<true, G>(b, xq, xs, out);
    }
};

struct Q6_K {
    static constexpr int64_t kBytes = 210;
    static constexpr bool kMins = false;
    static float d(const unsigned char *b) { return half_at(b + 208); }
    static float dmin(const unsigned char *) { return 0.0f; }
    template <int G>
    static void sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
                     BlockSums<G> &out) {
        q6_k_sums<G>(b, xq, xs, out);
    }
};

// W row `w` against x rows i0 .. i0+G: the dot products in f32, into `dot`.
template <class D, int G>
void row_dots(const unsigned char *w, const Q8BlockRows &x, int64_t i0, int64_t ahead,
              float *dot) {
    const int64_t blocks = x.k / kQ8Block, groups = x.k / kQ8Group;
    __m512 acc[G];
    __m256 acc_min[G];
    for (int g = 0; g < G; ++g) {
        acc[g] = _mm512_setzero_ps();
        acc_min[g] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b, w += D::kBytes) {
        _mm_prefetch(reinterpret_cast<const char *>(w) + ahead, _MM_HINT_T0);
        const int8_t *xq[G];
        const int16_t *xs[G];
        for (int g = 0; g < G; ++g) {
            xq[g] = x.q + (i0 + g) * x.k + b * kQ8Block;
            xs[g] = x.sum + (i0 + g) * groups + b * (kQ8Block / kQ8Group);
        }
        BlockSums<G> s;
        D::template sums<G>(w, xq, xs, s);
        const float d = D::d(w), dmin = D::dmin(w);
        for (int g = 0; g < G; ++g) {
            const float dx = x.scale[(i0 + g) * blocks + b];
            acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s.products[g]), _mm512_set1_ps(d * dx), acc[g]);
            if constexpr (D::kMins)
                acc_min[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s.mins[g]), _mm256_set1_ps(dmin * dx),
                                             acc_min[g]);
        }
    }
    for (int g = 0; g < G; ++g) dot[g] = _mm512_reduce_add_ps(acc[g]) - hsum(acc_min[g]);
}

// As gemv_q8k_avx2.cpp's rows(), eight x rows at a time (32 registers hold them).
template <class D>
void rows(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin, int64_t row_end) {
    constexpr int64_t kAhead = 2048;
    rows_in_groups<8>(p, row_begin, row_end, [&](auto size, const unsigned char *w, int64_t i0, float *dot) {
        row_dots<D, decltype(size)::value>(w, x, i0, kAhead, dot);
    });
}

}  // namespace

void gemv_q8k_avx512(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                     int64_t row_end) {
    switch (p.w_dtype) {
        case PAGODA_DTYPE_Q4_K: return rows<Q4_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q5_K: return rows<Q5_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q6_K: return rows<Q6_K>(p, x, row_begin, row_end);
        default: return;
    }
}

}  // namespace pagoda::cpu
