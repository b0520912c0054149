// AVX2/FMA/F16C small-m product on block-quantized W (see gemv.hpp), compiled as gemv_avx2.cpp is
// and under the same rule: no shared inline code but avx2_helpers.hpp.
//
// Two routes, chosen per type and m by measurement (110M-shape decode, 2 threads, 3 alternating
// rounds): Q4_0 and Q4_K with a single x row (one decode stream) are decoded in registers, 8
// values at a time met by the x row's FMA chains of 4 W rows, so W is read once and never
// stored: 1.1-1.3x the other route's tokens/s there. Every other case decodes a chunk of each
// of the tile's rows into an L1 buffer that the f32 kernel then streams for every x row
// (gemv.hpp's kBlockChunkValues): decoding once per tile serves all m rows, which beat
// re-decoding per group of x rows at batch 16, and it also won for Q8_0 at batch 1.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "avx2_helpers.hpp"
#include "gemv.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr int kTileRows = int(kGemvTileRows);

inline const unsigned char *row_at(const GemvProblem &p, int64_t j) {
    return static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
}

// y[j0..j0+R] of the single x row (= or +=) the accumulators' sums, plus the bias.
template <int R>
void store_row_sums(const GemvProblem &p, int64_t j0, const __m256 (&acc)[R]) {
    for (int r = 0; r < R; ++r) {
        float v = hsum(acc[r]);
        if (p.bias != nullptr) v += p.bias[j0 + r];
        if (p.accumulate) v += p.y[j0 + r];
        p.y[j0 + r] = v;
    }
}

// Values 8g..8g+8 of a Q4_0 block, unscaled, as f32.
struct Q4_0 {
    static constexpr int64_t kBytes = 18;
    // Groups 0-1 are the low nibbles of bytes 0-15, groups 2-3 the high nibbles; minus 8.
    static __m256 values(const unsigned char *block, int g) {
        const auto *bytes = reinterpret_cast<const __m128i *>(block + 2 + 8 * (g & 1));
        const __m128i q = _mm_loadl_epi64(bytes);
        const __m128i n = g < 2 ? q : _mm_srli_epi16(q, 4);
        const __m128i v = _mm_sub_epi8(_mm_and_si128(n, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
    }
};

// Q4_0 for one x row, in registers: outputs j0..j0+R, a sum of q·x per block and row, scaled
// once per block.
template <int R>
void q4_0_tile(const GemvProblem &p, int64_t j0) {
    const unsigned char *w[R];
    for (int r = 0; r < R; ++r) w[r] = row_at(p, j0 + r);
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < p.k / 32; ++b) {
        float scale[R];
        __m256 sum[R];
        for (int r = 0; r < R; ++r) {
            const unsigned char *block = w[r] + b * Q4_0::kBytes;
            scale[r] = half_at(block);
            _mm_prefetch(reinterpret_cast<const char *>(block) + 512, _MM_HINT_T0);
            sum[r] = _mm256_setzero_ps();
        }
        for (int g = 0; g < 4; ++g) {
            const __m256 xv = _mm256_loadu_ps(p.x + b * 32 + 8 * g);
            for (int r = 0; r < R; ++r)
                sum[r] = _mm256_fmadd_ps(Q4_0::values(w[r] + b * Q4_0::kBytes, g), xv, sum[r]);
        }
        for (int r = 0; r < R; ++r)
            acc[r] = _mm256_fmadd_ps(sum[r], _mm256_broadcast_ss(&scale[r]), acc[r]);
    }
    store_row_sums<R>(p, j0, acc);
}

// Q4_K for one x row, in registers. A value is d·sc·q − dmin·m over its 32-value sub-block, so
// per sub-block and row the kernel sums q·x (one FMA per 8 values), then adds d·sc times that
// and subtracts dmin·m times the sub-block's x sum, which the tile's rows share.
template <int R>
void q4_k_tile(const GemvProblem &p, int64_t j0) {
    constexpr int64_t kBlockBytes = 144;
    const unsigned char *w[R];
    for (int r = 0; r < R; ++r) w[r] = row_at(p, j0 + r);
    const float *x = p.x;
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    const __m128i low = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < p.k / 256; ++b) {
        float dsc[R][8], dmn[R][8];
        for (int r = 0; r < R; ++r) {
            const unsigned char *block = w[r] + b * kBlockBytes;
            __m256 sc, mn;
            k_scales_mins(block, &sc, &mn);
            _mm256_storeu_ps(dsc[r], sc);
            _mm256_storeu_ps(dmn[r], mn);
            _mm_prefetch(reinterpret_cast<const char *>(block) + 2 * kBlockBytes, _MM_HINT_T0);
        }
        for (int sub = 0; sub < 8; ++sub) {
            const float *xs = x + b * 256 + sub * 32;
            const __m256 x0 = _mm256_loadu_ps(xs), x1 = _mm256_loadu_ps(xs + 8),
                         x2 = _mm256_loadu_ps(xs + 16), x3 = _mm256_loadu_ps(xs + 24);
            const __m256 xsum = _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3));
            for (int r = 0; r < R; ++r) {
                // Sub-blocks 2i and 2i+1 are the low and high nibbles of bytes 32i..32i+32.
                const unsigned char *qs = w[r] + b * kBlockBytes + 16 + (sub / 2) * 32;
                auto group = [&](int g) {
                    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(qs + 8 * g));
                    if (sub & 1) q = _mm_srli_epi16(q, 4);
                    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(q, low)));
                };
                __m256 sum = _mm256_mul_ps(group(0), x0);
                sum = _mm256_fmadd_ps(group(1), x1, sum);
                sum = _mm256_fmadd_ps(group(2), x2, sum);
                sum = _mm256_fmadd_ps(group(3), x3, sum);
                acc[r] = _mm256_fmadd_ps(sum, _mm256_broadcast_ss(&dsc[r][sub]), acc[r]);
                acc[r] = _mm256_fnmadd_ps(xsum, _mm256_broadcast_ss(&dmn[r][sub]), acc[r]);
            }
        }
    }
    store_row_sums<R>(p, j0, acc);
}

// Tiles of kTileRows rows, then single rows.
template <void (*Tile)(const GemvProblem &, int64_t), void (*Single)(const GemvProblem &, int64_t)>
void single_x_rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    int64_t j = row_begin;
    for (; j + kTileRows <= row_end; j += kTileRows) Tile(p, j);
    for (; j < row_end; ++j) Single(p, j);
}

}  // namespace

void gemv_blocks_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    if (p.m == 1 && p.w_dtype == PAGODA_DTYPE_Q4_0)
        return single_x_rows<q4_0_tile<kTileRows>, q4_0_tile<1>>(p, row_begin, row_end);
    if (p.m == 1 && p.w_dtype == PAGODA_DTYPE_Q4_K)
        return single_x_rows<q4_k_tile<kTileRows>, q4_k_tile<1>>(p, row_begin, row_end);
    gemv_decoded_chunks(p, row_begin, row_end, decode_blocks_avx2, gemv_avx2);
}

}  // namespace pagoda::cpu
