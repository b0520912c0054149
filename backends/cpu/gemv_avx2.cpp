// AVX2/FMA/F16C build of the small-m product (see gemv.hpp). Compiled with -mavx2 -mfma -mf16c:
// everything here except gemv_avx2 has internal linkage, and no shared inline header (half.hpp,
// the standard library's templates) is used but the AVX2 files' own (avx2_helpers.hpp), so no
// AVX2 code can be merged into the portable paths by the linker.
//
// Decode is bound by memory bandwidth: each weight is used only m times. The kernel streams a
// tile of 4 W rows once while every x row (from cache) meets it, converting bf16/f16 to f32 in
// registers, with 4·M independent FMA chains to hide the FMA latency.
#include <immintrin.h>

#include <cstdint>

#include "avx2_helpers.hpp"
#include "gemv.hpp"

namespace pagoda::cpu {

namespace {

enum class WType { F32, BF16, F16 };

// Eight consecutive weights as f32.
template <WType T>
inline __m256 load8(const void *w, int64_t i) {
    if constexpr (T == WType::F32) {
        return _mm256_loadu_ps(static_cast<const float *>(w) + i);
    } else {
        const __m128i h = _mm_loadu_si128(
            reinterpret_cast<const __m128i *>(static_cast<const uint16_t *>(w) + i));
        if constexpr (T == WType::BF16)  // bf16 is the upper half of an f32
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        else
            return _mm256_cvtph_ps(h);
    }
}

template <WType T>
inline float load1(const void *w, int64_t i) {
    if constexpr (T == WType::F32) {
        return static_cast<const float *>(w)[i];
    } else {
        const uint16_t h = static_cast<const uint16_t *>(w)[i];
        if constexpr (T == WType::BF16)
            return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(int(uint32_t(h) << 16))));
        else
            return _cvtsh_ss(h);
    }
}

template <WType T>
constexpr int64_t kElemBytes = T == WType::F32 ? 4 : 2;

// Software prefetch this far ahead in each of the tile's W rows. With the hardware prefetcher
// alone a 4096² GEMV streamed ~22 GB/s of bf16/f16 and ~33 GB/s of f32 on one Zen 5 core; 2 KiB
// ahead gave ~32 and ~37 (0.5–8 KiB tried).
constexpr int64_t kPrefetchBytes = 2048;

// A prefetch is only a hint and never faults, so it may run past the row's end; the address is
// formed as an integer because a pointer that far past an array is undefined in C++.
inline void prefetch(const void *base, int64_t byte_offset) {
    _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(base) + byte_offset),
                 _MM_HINT_T0);
}

template <WType T>
inline const void *w_row(const GemvProblem &p, int64_t j) {
    return static_cast<const char *>(p.w) + j * p.ldw * kElemBytes<T>;
}

// Outputs j0..j0+R of x rows i0..i0+M: R·M accumulators, each W vector loaded once and used M
// times, each x vector loaded once and used R times.
template <WType T, int R, int M>
void tile(const GemvProblem &p, int64_t j0, int64_t i0) {
    const void *w[R];
    const float *x[M];
    for (int r = 0; r < R; ++r) w[r] = w_row<T>(p, j0 + r);
    for (int i = 0; i < M; ++i) x[i] = p.x + (i0 + i) * p.ldx;

    __m256 acc[R][M];
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();

    auto step = [&](int64_t c) {
        __m256 xv[M];
        for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x[i] + c);
        for (int r = 0; r < R; ++r) {
            const __m256 wv = load8<T>(w[r], c);
            for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(wv, xv[i], acc[r][i]);
        }
    };
    const int64_t k = p.k;
    constexpr int64_t line = 64 / kElemBytes<T>;  // weights per cache line
    // Within a row's last kPrefetchBytes the prefetch moves to the next tile's rows, which
    // start R rows on: for short rows (Llama-1B's 4 KiB of f16) it would otherwise cover only
    // each row's second half.
    const int64_t row_bytes = k * kElemBytes<T>, next_tile = R * p.ldw * kElemBytes<T>;
    int64_t c = 0;
    for (; c + line <= k; c += line) {
        const int64_t ahead = c * kElemBytes<T> + kPrefetchBytes;
        if (ahead < row_bytes)
            for (int r = 0; r < R; ++r) prefetch(w[r], ahead);
        else
            for (int r = 0; r < R; ++r) prefetch(w[r], ahead - row_bytes + next_tile);
        for (int64_t u = 0; u < line; u += 8) step(c + u);
    }
    for (; c + 8 <= k; c += 8) step(c);

    float sum[R][M];
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < M; ++i) sum[r][i] = hsum(acc[r][i]);
    for (; c < k; ++c)  // the last k % 8 inputs
        for (int r = 0; r < R; ++r) {
            const float wv = load1<T>(w[r], c);
            for (int i = 0; i < M; ++i) sum[r][i] += wv * x[i][c];
        }

    for (int i = 0; i < M; ++i) {
        float *y = p.y + (i0 + i) * p.ldy + j0;
        for (int r = 0; r < R; ++r) {
            float v = sum[r][i];
            if (p.bias != nullptr) v += p.bias[j0 + r];
            if (p.accumulate) v += y[r];
            y[r] = v;
        }
    }
}

// Up to 3 x rows per pass keeps 4·3 accumulators, 3 x vectors and one W vector in the 16 ymm
// registers; for m > 3 the later passes find the W tile in L1/L2, so memory still sees it once.
constexpr int kMaxXRows = 3;

template <WType T, int R>
void tile_all_x(const GemvProblem &p, int64_t j0) {
    for (int64_t i = 0; i < p.m; i += kMaxXRows) {
        const int64_t left = p.m - i;
        if (left == 1)
            tile<T, R, 1>(p, j0, i);
        else if (left == 2)
            tile<T, R, 2>(p, j0, i);
        else
            tile<T, R, 3>(p, j0, i);
    }
}

template <WType T>
void rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    int64_t j = row_begin;
    for (; j + kGemvTileRows <= row_end; j += kGemvTileRows) tile_all_x<T, kGemvTileRows>(p, j);
    for (; j < row_end; ++j) tile_all_x<T, 1>(p, j);
}

}  // namespace

void gemv_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    if (p.w_block_values > 1) return gemv_blocks_avx2(p, row_begin, row_end);
    switch (p.w_dtype) {
        case PAGODA_DTYPE_BF16:
            rows<WType::BF16>(p, row_begin, row_end);
            break;
        case PAGODA_DTYPE_F16:
            rows<WType::F16>(p, row_begin, row_end);
            break;
        default:
            rows<WType::F32>(p, row_begin, row_end);
            break;
    }
}

}  // namespace pagoda::cpu
