// AVX2/FMA/F16C small-m product on block-quantized W (see gemv.hpp), compiled as gemv_avx2.cpp is
// and under the same rule: no shared inline code.
//
// Q8_0 and Q4_0 are decoded in registers: for each 32-value block of each of the tile's 4 rows,
// 8 values at a time are widened, scaled by the block's f16 scale and met by every x row's
// FMA chain (4 rows × up to 3 x rows of accumulators), so W is read once and never stored. The
// K types (scales and mins packed per 256 values) are decoded a chunk of each row at a time into
// an L1 buffer that the f32 kernel then streams (gemv.hpp's kBlockChunkValues); decoding once
// per tile serves every x row.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "gemv.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr int kTileRows = int(kGemvTileRows);
constexpr int kMaxXRows = 3;  // 4·3 accumulators, 3 x vectors and one W vector: 16 registers

inline float half_at(const unsigned char *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Values 8g..8g+8 of a block, unscaled, as f32.
struct Q8_0 {
    static constexpr int64_t kBytes = 34;
    static __m256 values(const unsigned char *block, int g) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(block + 2 + 8 * g));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    }
};

struct Q4_0 {
    static constexpr int64_t kBytes = 18;
    // Groups 0-1 are the low nibbles of bytes 0-15, groups 2-3 the high nibbles; minus 8.
    static __m256 values(const unsigned char *block, int g) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(block + 2 + 8 * (g & 1)));
        const __m128i n = g < 2 ? q : _mm_srli_epi16(q, 4);
        const __m128i v = _mm_sub_epi8(_mm_and_si128(n, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
    }
};

// Outputs j0..j0+R of x rows i0..i0+M over every block of k.
template <class B, int R, int M>
void tile(const GemvProblem &p, int64_t j0, int64_t i0) {
    const unsigned char *w[R];
    const float *x[M];
    for (int r = 0; r < R; ++r) w[r] = static_cast<const unsigned char *>(p.w) + (j0 + r) * p.w_row_bytes;
    for (int i = 0; i < M; ++i) x[i] = p.x + (i0 + i) * p.ldx;
    __m256 acc[R][M];
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();

    const int64_t blocks = p.k / 32;
    for (int64_t b = 0; b < blocks; ++b) {
        float scale[R];
        for (int r = 0; r < R; ++r) {
            const unsigned char *block = w[r] + b * B::kBytes;
            scale[r] = half_at(block);
            _mm_prefetch(reinterpret_cast<const char *>(block) + 512, _MM_HINT_T0);
        }
        if constexpr (M == 1) {
            // One x row leaves registers for a block sum per row: the scale then costs one FMA
            // per block instead of a multiply per 8 values.
            __m256 sum[R];
            for (int r = 0; r < R; ++r) sum[r] = _mm256_setzero_ps();
            for (int g = 0; g < 4; ++g) {
                const __m256 xv = _mm256_loadu_ps(x[0] + b * 32 + 8 * g);
                for (int r = 0; r < R; ++r)
                    sum[r] = _mm256_fmadd_ps(B::values(w[r] + b * B::kBytes, g), xv, sum[r]);
            }
            for (int r = 0; r < R; ++r)
                acc[r][0] = _mm256_fmadd_ps(sum[r], _mm256_broadcast_ss(&scale[r]), acc[r][0]);
        } else {
            for (int g = 0; g < 4; ++g) {
                __m256 xv[M];
                for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x[i] + b * 32 + 8 * g);
                for (int r = 0; r < R; ++r) {
                    const __m256 wv = _mm256_mul_ps(B::values(w[r] + b * B::kBytes, g),
                                                    _mm256_broadcast_ss(&scale[r]));
                    for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(wv, xv[i], acc[r][i]);
                }
            }
        }
    }
    for (int i = 0; i < M; ++i) {
        float *y = p.y + (i0 + i) * p.ldy + j0;
        for (int r = 0; r < R; ++r) {
            float v = hsum(acc[r][i]);
            if (p.bias != nullptr) v += p.bias[j0 + r];
            if (p.accumulate) v += y[r];
            y[r] = v;
        }
    }
}

template <class B, int R>
void tile_all_x(const GemvProblem &p, int64_t j0) {
    for (int64_t i = 0; i < p.m; i += kMaxXRows) {
        const int64_t left = p.m - i;
        if (left == 1)
            tile<B, R, 1>(p, j0, i);
        else if (left == 2)
            tile<B, R, 2>(p, j0, i);
        else
            tile<B, R, 3>(p, j0, i);
    }
}

template <class B>
void register_rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    int64_t j = row_begin;
    for (; j + kTileRows <= row_end; j += kTileRows) tile_all_x<B, kTileRows>(p, j);
    for (; j < row_end; ++j) tile_all_x<B, 1>(p, j);
}

// Per tile of rows and chunk of k: decode the chunk, then the f32 kernel on it, its partial sums
// added into y after the first chunk.
void chunk_rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    alignas(32) float chunk[kGemvTileRows * kBlockChunkValues];
    const auto *w = static_cast<const unsigned char *>(p.w);
    for (int64_t j = row_begin; j < row_end; j += kGemvTileRows) {
        const int64_t tile_rows = row_end - j < kGemvTileRows ? row_end - j : kGemvTileRows;
        for (int64_t c0 = 0; c0 < p.k; c0 += kBlockChunkValues) {
            const int64_t kc = p.k - c0 < kBlockChunkValues ? p.k - c0 : kBlockChunkValues;
            const unsigned char *src = w + j * p.w_row_bytes + c0 / p.w_block_values * p.w_block_bytes;
            for (int64_t r = 0; r < tile_rows; ++r)
                decode_blocks_avx2(p.w_dtype, src + r * p.w_row_bytes, kc / p.w_block_values,
                                   chunk + r * kc);
            GemvProblem q = p;
            q.n = tile_rows;
            q.k = kc;
            q.x = p.x + c0;
            q.w = chunk;
            q.w_dtype = PAGODA_DTYPE_F32;
            q.ldw = kc;
            q.w_row_bytes = kc * int64_t(sizeof(float));
            q.w_block_values = 1;
            q.w_block_bytes = sizeof(float);
            q.bias = c0 == 0 && p.bias != nullptr ? p.bias + j : nullptr;
            q.y = p.y + j;
            q.accumulate = c0 == 0 ? p.accumulate : true;
            gemv_avx2(q, 0, tile_rows);
        }
    }
}

}  // namespace

void gemv_blocks_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    switch (p.w_dtype) {
        case PAGODA_DTYPE_Q8_0: return register_rows<Q8_0>(p, row_begin, row_end);
        case PAGODA_DTYPE_Q4_0: return register_rows<Q4_0>(p, row_begin, row_end);
        default: return chunk_rows(p, row_begin, row_end);
    }
}

}  // namespace pagoda::cpu
