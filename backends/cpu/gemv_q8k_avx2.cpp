// AVX2 build of the whole-block int8 route (gemv_q8k.hpp). Built with -mavx2 -mfma -mf16c and
// called only when cpuid has them.
//
// Per run of 32 values and W row: `maddubs` multiplies W's unsigned values (0..63) by x's
// signed bytes and adds neighbours (16 int16: |2 · 63 · 127| cannot saturate), `madd` by the
// run's integer scales (a `shuffle` spreads them) adds pairs to 8 int32, which add into the
// block's sum. Only the block's end converts to f32. The int8 ports then carry the run's work,
// and the shuffle goes to a port of its own; the 32-value route spent two more operations per
// run on the multiply ports (a convert and a multiply-add).
#include <immintrin.h>

#include <algorithm>

#include "avx2_helpers.hpp"
#include "gemv_q8k.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

// The int16 at position e of each 128-bit lane, spread over the lane (a `shuffle_epi8` mask).
inline __m128i spread_mask(int e) { return _mm_set1_epi16(short(((2 * e + 1) << 8) | (2 * e))); }

// One run's sum into the block's: products of W's unsigned bytes and x's, times `scales`.
inline __m256i add_run(__m256i sum, __m256i w, const int8_t *x, __m256i scales) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x));
    return _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), scales));
}

// A block's integer sums against G x rows' blocks (`xq[g]`: 256 bytes, `xs[g]`: its 16 group
// sums): `products[g]` Σ scale · w · x and `mins[g]` Σ min · x, each spread over 8 int32 lanes,
// so that row g adds d · products − dmin · mins. Each run of W is decoded once for the G rows.
template <int G>
struct BlockSums {
    __m256i products[G], mins[G];
};

// Q4_K and Q5_K: sub-block t is run t, its scale and min 6-bit integers; 4-bit values paired
// in 32 bytes per two runs (low nibbles first), Q5_K's fifth bits in qh (bit t: run t).
template <bool kFifthBit, int G>
void k_mins_sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
                 BlockSums<G> &out) {
    const __m128i scale_min = k_scale_min_bytes(b);
    // Each run's min twice, against the two 16-value sums of its run.
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scale_min, scale_min));
    for (int g = 0; g < G; ++g) {
        out.mins[g] = _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xs[g])));
        out.products[g] = _mm256_setzero_si256();
    }
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scale_min));
    const unsigned char *qs = b + (kFifthBit ? 48 : 16);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i qh = kFifthBit ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 16))
                           : _mm256_setzero_si256();
    for (int pair = 0; pair < 4; ++pair) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs + 32 * pair));
        __m256i lo = _mm256_and_si256(bits, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        if constexpr (kFifthBit) {
            // Bit 0 of each byte of qh, then bit 1, moved up to 16; qh shifts on by two.
            const __m256i one = _mm256_set1_epi8(1);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4));
            qh = _mm256_srli_epi16(qh, 2);
        }
        const int t = 2 * pair;
        const __m256i s0 = _mm256_shuffle_epi8(scales, _mm256_broadcastsi128_si256(spread_mask(t)));
        const __m256i s1 = _mm256_shuffle_epi8(scales, _mm256_broadcastsi128_si256(spread_mask(t + 1)));
        for (int g = 0; g < G; ++g) {
            out.products[g] = add_run(out.products[g], lo, xq[g] + 32 * t, s0);
            out.products[g] = add_run(out.products[g], hi, xq[g] + 32 * (t + 1), s1);
        }
    }
}

// Q6_K: stored values 0..63 (the weight plus 32); run t is quarter t % 4 of half t / 4
// (block_formats.cpp's q0..q3), with int8 scales sc[2t] for its first 16 values and sc[2t + 1]
// for the rest. The 32 comes off as 32 · Σ sc_g · (x's sum over group g).
template <int G>
void q6_k_sums(const unsigned char *b, const int8_t *const *xq, const int16_t *const *xs,
               BlockSums<G> &out) {
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 192)));
    for (int g = 0; g < G; ++g) {
        const __m256i xsum = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xs[g]));
        out.mins[g] = _mm256_setzero_si256();
        // Starts at −32 · Σ sc_g · xsum_g, exactly.
        out.products[g] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                           _mm256_slli_epi32(_mm256_madd_epi16(sc, xsum), 5));
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
        // Both lanes hold this half's 8 scales; lane 0 takes sc[2q], lane 1 sc[2q + 1].
        const __m256i half_scales = half == 0 ? _mm256_permute2x128_si256(sc, sc, 0x00)
                                              : _mm256_permute2x128_si256(sc, sc, 0x11);
        const unsigned char *ql = b + 64 * half;
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ql + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 128 + 32 * half));
        for (int quarter = 0; quarter < 4; ++quarter) {
            __m256i low = quarter % 2 == 0 ? l0 : l1;
            if (quarter >= 2) low = _mm256_srli_epi16(low, 4);
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * quarter), low2);
            const __m256i w = _mm256_or_si256(_mm256_and_si256(low, low4), _mm256_slli_epi16(high, 4));
            const __m256i mask = _mm256_set_m128i(spread_mask(2 * quarter + 1), spread_mask(2 * quarter));
            const __m256i scales = _mm256_shuffle_epi8(half_scales, mask);
            const int t = 4 * half + quarter;
            for (int g = 0; g < G; ++g)
                out.products[g] = add_run(out.products[g], w, xq[g] + 32 * t, scales);
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
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
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
            acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s.products[g]), _mm256_set1_ps(d * dx), acc[g]);
            if constexpr (D::kMins)
                acc[g] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(s.mins[g]), _mm256_set1_ps(dmin * dx), acc[g]);
        }
    }
    for (int g = 0; g < G; ++g) dot[g] = hsum(acc[g]);
}

// W rows in tiles; each W row meets x rows up to four at a time (its runs decoded once per
// four), and the tile stays in cache for the later groups, so W streams from memory once.
template <class D>
void rows(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin, int64_t row_end) {
    // 2 KiB ahead in each row's stream, as the other GEMVs (gemv_avx2.cpp's kPrefetchBytes).
    constexpr int64_t kAhead = 2048;
    rows_in_groups<4>(p, row_begin, row_end, [&](auto size, const unsigned char *w, int64_t i0, float *dot) {
        row_dots<D, decltype(size)::value>(w, x, i0, kAhead, dot);
    });
}

// x / d rounded to nearest even, 8 values (as the portable build divides).
inline __m256i round_div(__m256 v, __m256 d) {
    return _mm256_cvtps_epi32(
        _mm256_round_ps(_mm256_div_ps(v, d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The sum of 8 int32 lanes.
inline int hsum_epi32(__m256i v) {
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
}

}  // namespace

void quantize_blocks_avx2(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                          float *scale, int16_t *sum) {
    const int64_t blocks = k / kQ8Block;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t b = 0; b < blocks; ++b) {
            const float *v = x + i * ldx + b * kQ8Block;
            int8_t *out = q + i * k + b * kQ8Block;
            int16_t *group_sum = sum + (i * k + b * kQ8Block) / kQ8Group;
            __m256 amax = _mm256_setzero_ps();
            for (int c = 0; c < kQ8Block; c += 8)
                amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(v + c), abs_mask));
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            const float d = _mm_cvtss_f32(m4) / 127.0f;
            scale[i * blocks + b] = d;
            if (d == 0.0f) {
                for (int c = 0; c < kQ8Block; c += 32)
                    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + c), _mm256_setzero_si256());
                for (int g = 0; g < kQ8Block / kQ8Group; ++g) group_sum[g] = 0;
                continue;
            }
            const __m256 dv = _mm256_set1_ps(d);
            for (int c = 0; c < kQ8Block; c += 32) {
                __m256i n[4];
                for (int g = 0; g < 4; ++g) n[g] = round_div(_mm256_loadu_ps(v + c + 8 * g), dv);
                // Pack 4×8 int32 to 32 int8; the packs work per 128-bit lane, so restore the order.
                const __m256i w16a = _mm256_packs_epi32(n[0], n[1]), w16b = _mm256_packs_epi32(n[2], n[3]);
                const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b),
                                                                  _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + c), bytes);
                group_sum[c / kQ8Group] = int16_t(hsum_epi32(_mm256_add_epi32(n[0], n[1])));
                group_sum[c / kQ8Group + 1] = int16_t(hsum_epi32(_mm256_add_epi32(n[2], n[3])));
            }
        }
}

void gemv_q8k_avx2(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                   int64_t row_end) {
    switch (p.w_dtype) {
        case PAGODA_DTYPE_Q4_K: return rows<Q4_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q5_K: return rows<Q5_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q6_K: return rows<Q6_K>(p, x, row_begin, row_end);
        default: return;
    }
}

}  // namespace pagoda::cpu
