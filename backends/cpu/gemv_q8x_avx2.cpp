// AVX2 build of the int8 route (gemv_q8x.hpp): quantizing x, decoding W's blocks into int8
// runs in registers, and the dot products. Built with -mavx2 -mfma -mf16c and called only when
// cpuid has them.
//
// Per run of 32 values and W row: `maddubs` multiplies |w| (unsigned) by x carrying w's sign and
// adds neighbours (16 int16, which cannot saturate: |w| ≤ 128, |x| ≤ 127), `madd` by ones adds
// pairs to 8 int32 — lanes 0-3 hold the first 16 values' sums, lanes 4-7 the second's, matching
// W's scale per 16 — and one FMA scales them into the row's f32 accumulator.
//
// Each block of a W row is decoded in registers and used at once, per x row.
#include <immintrin.h>

#include <algorithm>

#include "avx2_helpers.hpp"
#include "gemv_q8x.hpp"

namespace pagoda::cpu {

namespace {

// The 8 int32 sums of products of the runs at `w` and `x`, as f32 (see the top of the file).
// `maddubs` takes its first operand unsigned: w's magnitudes, with w's signs moved onto x,
// unless w is known not to be negative (Q4_K and Q5_K: 0..31; 2·31·127 cannot saturate).
template <bool kUnsignedW>
inline __m256 run_products(__m256i w, __m256i x) {
    const __m256i products = kUnsignedW ? _mm256_maddubs_epi16(w, x)
                                        : _mm256_maddubs_epi16(_mm256_sign_epi8(w, w),
                                                               _mm256_sign_epi8(x, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(products, _mm256_set1_epi16(1)));
}

// The same for values stored as w + offset (unsigned), with `x_offset` = maddubs(offset, x):
// the offset comes off in int16, exactly (|w| ≤ offset keeps every pair sum in range), and
// x_offset serves every W row of the run, so a row costs one subtraction instead of the two
// sign moves of signed values. (Taking it off later in f32 lost accuracy where the unsigned
// products nearly cancel against it.)
inline __m256 offset_run_products(__m256i w_plus_offset, __m256i x, __m256i x_offset) {
    const __m256i products = _mm256_sub_epi16(_mm256_maddubs_epi16(w_plus_offset, x), x_offset);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(products, _mm256_set1_epi16(1)));
}

// {s[0] ×4, s[1] ×4}: a run's two scales, one per half, against run_products' lanes.
inline __m256 half_scales(const float *s) {
    // Through __m128i, whose type may alias the floats (a double load would not).
    const __m128 pair = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(s)));
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(pair),
                                    _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}

// W's block types as int8 runs (value = scale · q − min, runs of 32 as x's):
// `scales` gives a block's two scales per run and its mins, `run` the run's 32 q.
struct Q8_0 {
    static constexpr int64_t kValues = 32, kBytes = 34, kRuns = 1;
    static constexpr bool kMins = false, kScalePer16 = false, kUnsigned = false;
    static constexpr int kOffset = 0;
    static void scales(const unsigned char *b, float *s, float *) { s[0] = s[1] = half_at(b); }
    static __m256i run(const unsigned char *b, int) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 2));
    }
};

struct Q4_0 {
    static constexpr int64_t kValues = 32, kBytes = 18, kRuns = 1;
    static constexpr bool kMins = false, kScalePer16 = false, kUnsigned = false;
    static constexpr int kOffset = 0;
    static void scales(const unsigned char *b, float *s, float *) { s[0] = s[1] = half_at(b); }
    // Low nibbles are values 0-15, high nibbles 16-31; minus 8.
    static __m256i run(const unsigned char *b, int) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 2));
        const __m128i low = _mm_set1_epi8(0x0F);
        const __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low),
                                           _mm_and_si128(q, low));
        return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
    }
};

// Q4_K and Q5_K: sub-block t is run t, with its scale d·sc and min dmin·m.
inline void k_scales_mins(const unsigned char *b, float *s, float *mins) {
    __m256 sc, mn;
    k_scales_mins(b, &sc, &mn);
    _mm256_storeu_ps(mins, mn);
    // Each run's scale twice (one per half of the run, as Q6_K's two).
    _mm256_storeu_ps(s, _mm256_permutevar8x32_ps(sc, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)));
    _mm256_storeu_ps(s + 8, _mm256_permutevar8x32_ps(sc, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)));
}

// The nibbles of run t of 4-bit values packed two runs to 32 bytes (low nibbles first).
inline __m256i nibble_run(const unsigned char *qs, int t) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs + 32 * (t / 2)));
    if (t & 1) v = _mm256_srli_epi16(v, 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

struct Q4_K {
    static constexpr int64_t kValues = 256, kBytes = 144, kRuns = 8;
    static constexpr bool kMins = true, kScalePer16 = false, kUnsigned = true;
    static constexpr int kOffset = 0;
    static void scales(const unsigned char *b, float *s, float *mins) { k_scales_mins(b, s, mins); }
    static __m256i run(const unsigned char *b, int t) { return nibble_run(b + 16, t); }
};

struct Q5_K {
    static constexpr int64_t kValues = 256, kBytes = 176, kRuns = 8;
    static constexpr bool kMins = true, kScalePer16 = false, kUnsigned = true;
    static constexpr int kOffset = 0;
    static void scales(const unsigned char *b, float *s, float *mins) { k_scales_mins(b, s, mins); }
    // Bit t of qh[l] adds 16 to value l of run t.
    static __m256i run(const unsigned char *b, int t) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 16));
        const __m256i bit = _mm256_and_si256(qh, _mm256_set1_epi8(char(1u << t)));
        const __m256i high = _mm256_andnot_si256(_mm256_cmpeq_epi8(bit, _mm256_setzero_si256()),
                                                 _mm256_set1_epi8(16));
        return _mm256_or_si256(nibble_run(b + 48, t), high);
    }
};

// Q6_K: run t is quarter t % 4 of half t / 4 (block_formats.cpp's q0..q3), a scale per 16;
// runs are the stored values 0..63, 32 above the weights' (offset_run_products).
struct Q6_K {
    static constexpr int64_t kValues = 256, kBytes = 210, kRuns = 8;
    static constexpr bool kMins = false, kScalePer16 = true, kUnsigned = true;
    static constexpr int kOffset = 32;
    // Run t's scales are sc[2t] and sc[2t + 1] (sc[8·half + 2·quarter] and the next): the 16
    // scales in order, converted with vector stores that the runs' 8-byte loads forward from.
    static void scales(const unsigned char *b, float *s, float *) {
        const __m256 d = _mm256_set1_ps(half_at(b + 208));
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 192));
        _mm256_store_ps(s, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
        _mm256_store_ps(s + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                    _mm_srli_si128(sc, 8)))));
    }
    static __m256i run(const unsigned char *b, int t) {
        const int half = t / 4, quarter = t % 4;
        const unsigned char *ql = b + 64 * half + 32 * (quarter & 1), *qh = b + 128 + 32 * half;
        __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ql));
        if (quarter >= 2) low = _mm256_srli_epi16(low, 4);
        low = _mm256_and_si256(low, _mm256_set1_epi8(0x0F));
        __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qh));
        high = _mm256_and_si256(_mm256_srli_epi16(high, 2 * quarter), _mm256_set1_epi8(3));
        return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
    }
};

// Decoding in registers: W rows j0..j0+R against x row i, each block decoded and used at once.
template <class D, int R>
void direct_rows(const GemvProblem &p, const Q8Rows &x, int64_t i, int64_t j0) {
    const unsigned char *w[R];
    for (int r = 0; r < R; ++r) w[r] = static_cast<const unsigned char *>(p.w) + (j0 + r) * p.w_row_bytes;
    const int64_t x_runs = x.k / kQ8Run;
    const int8_t *xq = x.q + i * x.k;
    const float *xd = x.scale + i * x_runs, *xs = x.sum + i * x_runs;
    // 2 KiB ahead in each of the tile's row streams, as the float GEMV does (gemv_avx2.cpp's
    // kPrefetchBytes), or the next tile's row where R rows span less. A block or so ahead (136
    // bytes for Q8_0) left the 110M shape's decode waiting on memory: 90 tokens/s, 120-136
    // with this.
    const int64_t ahead = std::min<int64_t>(R * p.w_row_bytes, 2048);
    __m256 acc[R], acc_min[R];
    for (int r = 0; r < R; ++r) acc[r] = acc_min[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < p.k / D::kValues; ++b) {
        // Each half run's W scale times its x run's scale, for the block's runs at once (the
        // product is what a multiply per run and row gave, rounded alike).
        alignas(32) float s[R][2 * D::kRuns], mins[R][D::kRuns > 8 ? D::kRuns : 8];
        for (int r = 0; r < R; ++r) {
            const unsigned char *block = w[r] + b * D::kBytes;
            D::scales(block, s[r], mins[r]);
            _mm_prefetch(reinterpret_cast<const char *>(block) + ahead, _MM_HINT_T0);
        }
        if constexpr (D::kRuns == 8) {
            const __m256 dx = _mm256_loadu_ps(xd + b * 8);
            const __m256 dx_low = _mm256_permutevar8x32_ps(dx, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
            const __m256 dx_high = _mm256_permutevar8x32_ps(dx, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
            for (int r = 0; r < R; ++r) {
                _mm256_store_ps(s[r], _mm256_mul_ps(_mm256_load_ps(s[r]), dx_low));
                _mm256_store_ps(s[r] + 8, _mm256_mul_ps(_mm256_load_ps(s[r] + 8), dx_high));
            }
        } else {
            static_assert(D::kRuns == 1);
            for (int r = 0; r < R; ++r) {
                s[r][0] *= xd[b];
                s[r][1] *= xd[b];
            }
        }
        for (int t = 0; t < int(D::kRuns); ++t) {
            const int64_t run = b * D::kRuns + t;
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + run * kQ8Run));
            const __m256i x_offset = D::kOffset != 0 ? _mm256_maddubs_epi16(_mm256_set1_epi8(D::kOffset), xv)
                                                     : _mm256_setzero_si256();
            for (int r = 0; r < R; ++r) {
                const __m256i wv = D::run(w[r] + b * D::kBytes, t);
                // One scale per run is broadcast (a scalar store forwards to a scalar load).
                const __m256 ws = D::kScalePer16 ? half_scales(s[r] + 2 * t)
                                                 : _mm256_broadcast_ss(s[r] + 2 * t);
                const __m256 products = D::kOffset != 0 ? offset_run_products(wv, xv, x_offset)
                                                        : run_products<D::kUnsigned>(wv, xv);
                acc[r] = _mm256_fmadd_ps(products, ws, acc[r]);
            }
        }
        if constexpr (D::kMins) {
            const __m256 sums = _mm256_loadu_ps(xs + b * D::kRuns);
            for (int r = 0; r < R; ++r)
                acc_min[r] = _mm256_fmadd_ps(_mm256_load_ps(mins[r]), sums, acc_min[r]);
        }
    }
    float *y = p.y + i * p.ldy;
    for (int r = 0; r < R; ++r) {
        float v = hsum(acc[r]);
        if constexpr (D::kMins) v -= hsum(acc_min[r]);
        if (p.bias != nullptr) v += p.bias[j0 + r];
        if (p.accumulate) v += y[j0 + r];
        y[j0 + r] = v;
    }
}

// Every x row meets a tile of W rows before the next tile: the tile (a few KiB to a few tens)
// stays in cache for the later x rows, so W streams from memory once whatever m is. Within the
// tile one row at a time, so W streams in order: the tile's rows side by side (four streams
// interleaved per block) read Q8_0 at 19-28 GB/s at m = 1, a row at a time at 25-28
// (pagoda-bench-kernels --bench gemv_q8x, 2 threads), and 1B Q8_0 decode went from 11.0-11.6 to
// 13.8-14.4 tokens/s. At m = 2-8 the two orders measured alike within the noise.
template <class D>
void direct(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end) {
    for (int64_t j0 = row_begin; j0 < row_end; j0 += kGemvTileRows) {
        const int64_t tile_end = std::min(row_end, j0 + kGemvTileRows);
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = j0; j < tile_end; ++j) direct_rows<D, 1>(p, x, i, j);
    }
}

}  // namespace

void quantize_rows_avx2(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                        float *scale, float *sum) {
    const int64_t runs = k / kQ8Run;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t r = 0; r < runs; ++r) {
            const float *v = x + i * ldx + r * kQ8Run;
            __m256 part[4];
            __m256 amax = _mm256_setzero_ps();
            for (int g = 0; g < 4; ++g) {
                part[g] = _mm256_loadu_ps(v + 8 * g);
                amax = _mm256_max_ps(amax, _mm256_and_ps(part[g], abs_mask));
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            const float d = _mm_cvtss_f32(m4) / 127.0f;
            int8_t *out = q + i * k + r * kQ8Run;
            if (d == 0.0f) {
                _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), _mm256_setzero_si256());
                scale[i * runs + r] = 0.0f;
                sum[i * runs + r] = 0.0f;
                continue;
            }
            // x / d (as the portable build divides), rounded to nearest even.
            const __m256 dv = _mm256_set1_ps(d);
            __m256i n[4];
            for (int g = 0; g < 4; ++g)
                n[g] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_div_ps(part[g], dv),
                                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            // Pack 4×8 int32 to 32 int8; the packs work per 128-bit lane, so restore the order.
            const __m256i w16a = _mm256_packs_epi32(n[0], n[1]), w16b = _mm256_packs_epi32(n[2], n[3]);
            const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b),
                                                              _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), bytes);
            const __m256i total32 =
                _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total32),
                                      _mm256_extracti128_si256(total32, 1));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
            scale[i * runs + r] = d;
            sum[i * runs + r] = d * float(_mm_cvtsi128_si32(t));
        }
    }
}

void gemv_q8x_avx2(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end) {
    switch (p.w_dtype) {
        case PAGODA_DTYPE_Q8_0: return direct<Q8_0>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q4_0: return direct<Q4_0>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q4_K: return direct<Q4_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q5_K: return direct<Q5_K>(p, x, row_begin, row_end);
        case PAGODA_DTYPE_Q6_K: return direct<Q6_K>(p, x, row_begin, row_end);
        default: return;
    }
}

}  // namespace pagoda::cpu
