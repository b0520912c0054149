// The AVX2 build of the tiled int8 route for Q8_0 W at several x rows (gemv_q8x.hpp), for
// processors without AVX-512 VNNI: the arrangement of gemv_q8x_tiles_avx512.cpp on 32-byte
// registers and without dpbusd.
//
// A block's 32 byte products go through `maddubs` (|w| unsigned times x carrying w's sign: pairs
// of products in int16, which cannot saturate as |w| ≤ 128 and |x| ≤ 127) and a `madd` by ones
// (int32, four products per lane). Loaded as stored, a block fills a register, and each block
// would need its own conversion to f32 and multiply-add by its scale. Here W's and x's blocks
// are regrouped by 4-byte pieces, eight blocks at a time (register v holds bytes 4v..4v+3 of
// blocks 0-7, block b in lane b: a transpose of 8 × 8 dwords), so eight registers leave eight
// blocks' dot products in eight lanes, and one conversion and one multiply-add take them into
// f32. W's regrouping (24 shuffles per group of a row) is done once for every x row of a block
// of x rows, into a small buffer that stays in L1; x is regrouped once per product.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "avx2_helpers.hpp"
#include "gemv_q8x.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

constexpr int64_t kQ8_0Bytes = 34;
constexpr int64_t kGroupBlocks = 8;  // blocks per group: 256 values, eight 32-byte registers
constexpr int kTileRows = 4;         // W rows a tile takes together

// out[v] = {piece v of run 0, ..., piece v of run 7}, 4-byte pieces of the eight 32-byte runs
// in[0..7]: the 8 × 8 transpose of their dwords.
inline void regroup(const __m256i in[8], __m256i out[8]) {
    __m256i pairs[8], quads[8];
    for (int p = 0; p < 4; ++p) {
        // {r0.0 r1.0 r0.1 r1.1 | r0.4 r1.4 r0.5 r1.5} and {.2 .3 | .6 .7} of runs 2p, 2p + 1.
        pairs[2 * p] = _mm256_unpacklo_epi32(in[2 * p], in[2 * p + 1]);
        pairs[2 * p + 1] = _mm256_unpackhi_epi32(in[2 * p], in[2 * p + 1]);
    }
    for (int h = 0; h < 2; ++h) {
        // Runs 4h..4h+3 side by side: pieces 0 | 4, 1 | 5, 2 | 6, 3 | 7.
        const __m256i *a = pairs + 4 * h;
        quads[4 * h + 0] = _mm256_unpacklo_epi64(a[0], a[2]);
        quads[4 * h + 1] = _mm256_unpackhi_epi64(a[0], a[2]);
        quads[4 * h + 2] = _mm256_unpacklo_epi64(a[1], a[3]);
        quads[4 * h + 3] = _mm256_unpackhi_epi64(a[1], a[3]);
    }
    for (int v = 0; v < 4; ++v) {
        out[v] = _mm256_permute2x128_si256(quads[v], quads[4 + v], 0x20);
        out[v + 4] = _mm256_permute2x128_si256(quads[v], quads[4 + v], 0x31);
    }
}

// A tile's W rows for one group, regrouped: w (whose signs go onto x), |w| (maddubs' unsigned
// operand, kept so that each x row does not take it again), and the eight blocks' scales.
template <int R>
struct TileGroup {
    __m256i w[R][8];
    __m256i magnitude[R][8];
    __m256 scale[R];
};

template <int R>
inline void load_group(const unsigned char *w, int64_t row_bytes, TileGroup<R> &t) {
    for (int r = 0; r < R; ++r) {
        const unsigned char *blocks = w + r * row_bytes;
        __m256i runs[8];
        alignas(16) uint16_t halves[8];
        for (int b = 0; b < 8; ++b) {
            runs[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blocks + b * kQ8_0Bytes + 2));
            std::memcpy(&halves[b], blocks + b * kQ8_0Bytes, 2);
        }
        regroup(runs, t.w[r]);
        for (int v = 0; v < 8; ++v) t.magnitude[r][v] = _mm256_abs_epi8(t.w[r][v]);
        t.scale[r] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i *>(halves)));
    }
}

// y for W rows j .. j+R of x rows i0 .. i0+rows (at most kQ8TileMaxRows).
template <int R>
void tile(const GemvProblem &p, const Q8TileRows &x, int64_t i0, int64_t rows, int64_t j) {
    const int64_t runs = x.k / kQ8Run, groups = runs / kGroupBlocks;
    // acc[r·rows + i]: x row i0+i's sums for W row j+r, per lane.
    __m256 acc[R * kQ8TileMaxRows];
    for (int64_t a = 0; a < R * rows; ++a) acc[a] = _mm256_setzero_ps();
    const auto *w = static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
    const __m256i ones = _mm256_set1_epi16(1);
    TileGroup<R> t;
    for (int64_t g = 0; g < groups; ++g) {
        load_group<R>(w + g * kGroupBlocks * kQ8_0Bytes, p.w_row_bytes, t);
        const unsigned char *xg = x.q + i0 * x.k + g * kGroupBlocks * kQ8Run;
        const float *dg = x.scale + i0 * runs + g * kGroupBlocks;
        for (int64_t i = 0; i < rows; ++i, xg += x.k, dg += runs) {
            __m256i s[R];
            for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_si256();
            for (int v = 0; v < 8; ++v) {
                const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xg + 32 * v));
                for (int r = 0; r < R; ++r) {
                    const __m256i x_signed = _mm256_sign_epi8(xv, t.w[r][v]);
                    const __m256i pairs = _mm256_maddubs_epi16(t.magnitude[r][v], x_signed);
                    s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(pairs, ones));
                }
            }
            const __m256 dx = _mm256_loadu_ps(dg);
            for (int r = 0; r < R; ++r) {
                __m256 &a = acc[r * rows + i];
                a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), _mm256_mul_ps(t.scale[r], dx), a);
            }
        }
    }
    for (int64_t i = 0; i < rows; ++i)
        for (int r = 0; r < R; ++r) store_output(p, i0 + i, j + r, hsum(acc[r * rows + i]));
}

}  // namespace

void regroup_q8x_rows_avx2(const Q8Rows &x, unsigned char *q) {
    const int64_t groups = x.k / (kGroupBlocks * kQ8Run);
    for (int64_t i = 0; i < x.m; ++i)
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t at = i * x.k + g * kGroupBlocks * kQ8Run;
            __m256i runs[8], out[8];
            for (int b = 0; b < 8; ++b)
                runs[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.q + at + b * kQ8Run));
            regroup(runs, out);
            for (int v = 0; v < 8; ++v) _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + at + 32 * v), out[v]);
        }
}

void gemv_q8x_tiles_avx2(const GemvProblem &p, const Q8TileRows &x, int64_t row_begin, int64_t row_end) {
    tiles_in_chunks<kTileRows, kQ8TileMaxRows>(x.m, row_begin, row_end, [&](auto size, int64_t i0, int64_t rows, int64_t j) {
        tile<decltype(size)::value>(p, x, i0, rows, j);
    });
}

}  // namespace pagoda::cpu
