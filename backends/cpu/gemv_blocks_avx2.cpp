// AVX2/FMA/F16C small-m product on block-quantized W (see gemv.hpp), compiled as gemv_avx2.cpp is
// and under the same rule: no shared inline code.
//
// Q8_0 and Q4_0 are decoded in registers: for each 32-value block of each of the tile's 4 rows,
// 8 values at a time are widened, scaled by the block's f16 scale and met by every x row's
// FMA chain (4 rows × up to 3 x rows of accumulators), so W is read once and never stored. The
// K types (scales and mins packed per 256 values) are decoded a chunk of each row at a time into
// an L1 buffer that the f32 kernel then streams (gemv.hpp's kBlockChunkValues); decoding once
// per tile serves every x row. Q4_K, the most used of them, also has an in-register kernel for
// a single x row (decode of one stream), where nothing is shared to pay for the buffer.
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

// Q4_K/Q5_K's packed 6-bit scale and min of sub-block `sub` (as block_formats.cpp).
inline void scale_and_min(const unsigned char *packed, int sub, float *scale, float *min) {
    if (sub < 4) {
        *scale = float(packed[sub] & 63);
        *min = float(packed[sub + 4] & 63);
    } else {
        *scale = float((packed[sub + 4] & 0x0F) | ((packed[sub - 4] >> 6) << 4));
        *min = float((packed[sub + 4] >> 4) | ((packed[sub] >> 6) << 4));
    }
}

// Q4_K for one x row, in registers. A value is d·sc·q − dmin·m over its 32-value sub-block, so
// per sub-block and row the kernel sums q·x (one FMA per 8 values), then adds d·sc times that
// and subtracts dmin·m times the sub-block's x sum, which the tile's rows share.
template <int R>
void q4_k_tile(const GemvProblem &p, int64_t j0) {
    constexpr int64_t kBlockBytes = 144;
    const unsigned char *w[R];
    for (int r = 0; r < R; ++r) w[r] = static_cast<const unsigned char *>(p.w) + (j0 + r) * p.w_row_bytes;
    const float *x = p.x;
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    const __m128i low = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < p.k / 256; ++b) {
        float dsc[R][8], dmn[R][8];
        for (int r = 0; r < R; ++r) {
            const unsigned char *block = w[r] + b * kBlockBytes;
            const float d = half_at(block), dmin = half_at(block + 2);
            for (int sub = 0; sub < 8; ++sub) {
                float sc, mn;
                scale_and_min(block + 4, sub, &sc, &mn);
                dsc[r][sub] = d * sc;
                dmn[r][sub] = dmin * mn;
            }
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
    for (int r = 0; r < R; ++r) {
        float v = hsum(acc[r]);
        if (p.bias != nullptr) v += p.bias[j0 + r];
        if (p.accumulate) v += p.y[j0 + r];
        p.y[j0 + r] = v;
    }
}

void q4_k_rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    int64_t j = row_begin;
    for (; j + kTileRows <= row_end; j += kTileRows) q4_k_tile<kTileRows>(p, j);
    for (; j < row_end; ++j) q4_k_tile<1>(p, j);
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
        case PAGODA_DTYPE_Q4_K:
            if (p.m == 1) return q4_k_rows(p, row_begin, row_end);
            return chunk_rows(p, row_begin, row_end);
        default: return chunk_rows(p, row_begin, row_end);
    }
}

}  // namespace pagoda::cpu
