// The AVX-512 build of the int8 route for Q8_0 W at several x rows (gemv_q8x.hpp), on processors
// with AVX-512 BW, VL and VNNI: a tile of four W rows meets every x row while it sits in
// registers, and the f32 work per block is spread over eight blocks at once.
//
// A dpbusd sums four byte products into each int32 lane; a block's 32 products span eight
// lanes of a register loaded from W as it is stored. Here W's and x's blocks are regrouped so
// that in each of four registers the eight bytes a block has in that register sit in the same
// lanes (register v holds bytes 8v..8v+7 of blocks 0-7 of a group of eight): four dpbusd then
// leave each block's dot product in its own two lanes, and one conversion and one multiply-add
// by the blocks' scale products take eight blocks into f32 where the row-at-a-time build
// (gemv_q8x_avx512.cpp) spends them per pair of blocks. W's regrouping costs eight two-source
// permutes per group of a row, once for all x rows; x is regrouped once per product.
//
// dpbusd multiplies an unsigned byte by a signed one: x is stored plus 128, and each W row's
// group starts its sums at −128·Σw, its own dpbusd against bytes of 128.
#include <immintrin.h>

#include <algorithm>

#include "gemv_q8x.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

constexpr int64_t kQ8_0Bytes = 34;
constexpr int64_t kGroupBlocks = 8;  // blocks per group: 256 values, four 64-byte registers
constexpr int kTileRows = 4;         // W rows a tile holds in registers

// Four 64-byte registers that regroup 8 blocks' 32-byte runs (at `run(b)`), by 8-byte pieces:
// out[v] = {piece v of block 0, ..., piece v of block 7}.
template <typename Run>
inline void regroup(Run run, __m512i out[4]) {
    __m512i pairs[4];
    for (int p = 0; p < 4; ++p)
        pairs[p] = _mm512_inserti64x4(_mm512_castsi256_si512(run(2 * p)), run(2 * p + 1), 1);
    // Pieces 0-1 and 2-3 of blocks 0-3 (from pairs 0, 1) and of blocks 4-7 (pairs 2, 3)...
    const __m512i low = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i high = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i a01 = _mm512_permutex2var_epi64(pairs[0], low, pairs[1]);
    const __m512i a23 = _mm512_permutex2var_epi64(pairs[0], high, pairs[1]);
    const __m512i b01 = _mm512_permutex2var_epi64(pairs[2], low, pairs[3]);
    const __m512i b23 = _mm512_permutex2var_epi64(pairs[2], high, pairs[3]);
    // ...then each piece's four blocks from the first half beside its four from the second.
    const __m512i first = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i second = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    out[0] = _mm512_permutex2var_epi64(a01, first, b01);
    out[1] = _mm512_permutex2var_epi64(a01, second, b01);
    out[2] = _mm512_permutex2var_epi64(a23, first, b23);
    out[3] = _mm512_permutex2var_epi64(a23, second, b23);
}

// Each of 8 floats twice: {a, a, b, b, ...}, a block's scale for both its lanes.
inline __m512 doubled(__m256 v) {
    const __m512i index = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    return _mm512_permutexvar_ps(index, _mm512_castps256_ps512(v));
}

// One group of a W row, ready for the x rows: its regrouped values, −128·Σw per lane, and its
// blocks' scales doubled.
struct RowGroup {
    __m512i w[4];
    __m512i start;
    __m512 scale;
};

inline RowGroup load_group(const unsigned char *blocks) {
    RowGroup g;
    regroup(
        [&](int b) {
            return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blocks + b * kQ8_0Bytes + 2));
        },
        g.w);
    const __m512i bias = _mm512_set1_epi8(char(0x80));  // 128 as the unsigned operand
    __m512i sums = _mm512_setzero_si512();
    for (int v = 0; v < 4; ++v) sums = _mm512_dpbusd_epi32(sums, bias, g.w[v]);
    g.start = _mm512_sub_epi32(_mm512_setzero_si512(), sums);
    // The blocks' f16 scales: the low halves of the dwords at 34·b.
    const __m256i at = _mm256_setr_epi32(0, 34, 68, 102, 136, 170, 204, 238);
    const __m256i h = _mm256_i32gather_epi32(reinterpret_cast<const int *>(blocks), at, 1);
    g.scale = doubled(_mm256_cvtph_ps(_mm256_cvtepi32_epi16(h)));
    return g;
}

// y for W rows j .. j+R of x rows i0 .. i0+rows (at most kQ8TileMaxRows).
template <int R>
void tile(const GemvProblem &p, const Q8TileRows &x, int64_t i0, int64_t rows, int64_t j) {
    const int64_t runs = x.k / kQ8Run, groups = runs / kGroupBlocks;
    // acc[r·rows + i]: x row i0+i's sums for W row j+r, per lane.
    __m512 acc[R * kQ8TileMaxRows];
    for (int64_t a = 0; a < R * rows; ++a) acc[a] = _mm512_setzero_ps();
    const auto *w = static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
    for (int64_t g = 0; g < groups; ++g) {
        RowGroup rg[R];
        for (int r = 0; r < R; ++r) {
            const unsigned char *blocks = w + r * p.w_row_bytes + g * kGroupBlocks * kQ8_0Bytes;
            rg[r] = load_group(blocks);
        }
        const unsigned char *xg = x.q + i0 * x.k + g * kGroupBlocks * kQ8Run;
        const float *dg = x.scale + i0 * 2 * runs + g * 2 * kGroupBlocks;
        for (int64_t i = 0; i < rows; ++i, xg += x.k, dg += 2 * runs) {
            const __m512i x0 = _mm512_loadu_si512(xg), x1 = _mm512_loadu_si512(xg + 64),
                          x2 = _mm512_loadu_si512(xg + 128), x3 = _mm512_loadu_si512(xg + 192);
            const __m512 dx = _mm512_loadu_ps(dg);
            for (int r = 0; r < R; ++r) {
                __m512i s = _mm512_dpbusd_epi32(rg[r].start, x0, rg[r].w[0]);
                s = _mm512_dpbusd_epi32(s, x1, rg[r].w[1]);
                s = _mm512_dpbusd_epi32(s, x2, rg[r].w[2]);
                s = _mm512_dpbusd_epi32(s, x3, rg[r].w[3]);
                __m512 &a = acc[r * rows + i];
                a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(rg[r].scale, dx), a);
            }
        }
    }
    for (int64_t i = 0; i < rows; ++i)
        for (int r = 0; r < R; ++r) store_output(p, i0 + i, j + r, _mm512_reduce_add_ps(acc[r * rows + i]));
}

}  // namespace

void regroup_q8x_rows_avx512(const Q8Rows &x, unsigned char *q, float *scale) {
    const int64_t runs = x.k / kQ8Run, groups = runs / kGroupBlocks;
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int64_t i = 0; i < x.m; ++i)
        for (int64_t g = 0; g < groups; ++g) {
            const int8_t *src = x.q + i * x.k + g * kGroupBlocks * kQ8Run;
            __m512i out[4];
            // Adding 128 modulo 256 is flipping the top bit: int8 v becomes uint8 v + 128.
            regroup(
                [&](int b) {
                    return _mm256_xor_si256(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + b * kQ8Run)), bias);
                },
                out);
            unsigned char *dst = q + i * x.k + g * kGroupBlocks * kQ8Run;
            for (int v = 0; v < 4; ++v) _mm512_storeu_si512(dst + 64 * v, out[v]);
            const __m512 d = doubled(_mm256_loadu_ps(x.scale + i * runs + g * kGroupBlocks));
            _mm512_storeu_ps(scale + i * 2 * runs + g * 2 * kGroupBlocks, d);
        }
}

void gemv_q8x_tiles_avx512(const GemvProblem &p, const Q8TileRows &x, int64_t row_begin, int64_t row_end) {
    tiles_in_chunks<kTileRows, kQ8TileMaxRows>(x.m, row_begin, row_end, [&](auto size, int64_t i0, int64_t rows, int64_t j) {
        tile<decltype(size)::value>(p, x, i0, rows, j);
    });
}

}  // namespace pagoda::cpu
