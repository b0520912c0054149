// The AVX2/FMA/F16C inner loops of paged attention (see paged_attention_rows.hpp). Compiled with
// -mavx2 -mfma -mf16c, so everything here has internal linkage and the only shared header it
// includes is the AVX2 files' own (avx2_helpers.hpp): the linker must never pick an AVX2 copy of
// a helper for the portable code.
//
// Decode reads every cached row once per step, so these loops are built around reading a K or V
// row from memory once per GQA group and widening bf16/f16 to f32 in registers, never through
// memory. Scores are computed for several keys and heads at once and reduced together; every
// loop also prefetches the rows the caller reads next (RowPrefetch), since the block table
// scatters them where the hardware prefetcher cannot follow.
#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "avx2_helpers.hpp"
#include "paged_attention_rows.hpp"
#include "softcap.hpp"

namespace pagoda::cpu {

namespace {

// Eight consecutive elements of a cache row, widened to f32.
template <pagoda_dtype_t DT>
__m256 load8(const void *row, int64_t i) {
    if constexpr (DT == PAGODA_DTYPE_BF16) {
        const __m128i h = _mm_loadu_si128(
            reinterpret_cast<const __m128i *>(static_cast<const uint16_t *>(row) + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else if constexpr (DT == PAGODA_DTYPE_F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(
            reinterpret_cast<const __m128i *>(static_cast<const uint16_t *>(row) + i)));
    } else {
        return _mm256_loadu_ps(static_cast<const float *>(row) + i);
    }
}

// One element, for the tail of a row whose length is not a multiple of 8.
template <pagoda_dtype_t DT>
float load1(const void *row, int64_t i) {
    if constexpr (DT == PAGODA_DTYPE_BF16) {
        const uint32_t u = uint32_t(static_cast<const uint16_t *>(row)[i]) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    } else if constexpr (DT == PAGODA_DTYPE_F16) {
        return _cvtsh_ss(static_cast<const uint16_t *>(row)[i]);
    } else {
        return static_cast<const float *>(row)[i];
    }
}

template <pagoda_dtype_t DT>
const void *nth_row(const void *rows, int64_t j, int64_t head_dim) {
    constexpr int64_t bytes = DT == PAGODA_DTYPE_F32 ? 4 : 2;
    return static_cast<const unsigned char *>(rows) + j * head_dim * bytes;
}

// Touches the line at byte `offset` of the run the caller reads next (see RowPrefetch).
void prefetch_at(const RowPrefetch &pf, int64_t offset) {
    if (offset < pf.bytes)
        _mm_prefetch(static_cast<const char *>(pf.next) + offset, _MM_HINT_T0);
}

float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// How many 8-wide slices of a V row to keep in flight per query head: enough independent FMA
// chains (NR · NC of them) to cover the FMA latency, few enough to stay in 16 registers.
template <int NR>
constexpr int kSlices = NR == 1 ? 8 : NR == 2 ? 4 : 2;

// Horizontal sums of several vectors at once: lane i of the result is the sum of the lanes of
// v[i]. A tree of horizontal adds reduces eight dot products in nine instructions, where
// reducing each alone takes five.
__m256 hsum8(const __m256 *v) {
    const __m256 s01 = _mm256_hadd_ps(v[0], v[1]), s23 = _mm256_hadd_ps(v[2], v[3]);
    const __m256 s45 = _mm256_hadd_ps(v[4], v[5]), s67 = _mm256_hadd_ps(v[6], v[7]);
    // Lanes 0–3 of s0123 hold v0..v3 summed over their low halves, lanes 4–7 over their high.
    const __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20),
                         _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

__m128 hsum4(const __m256 *v) {
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// Keys per score block for NR query heads: twelve accumulator chains (NR · NK) where they fit,
// more than the eight that just cover the FMA latency at two FMAs per cycle; for four heads
// that measured ~15 % faster than eight chains. One head keeps eight keys, so that a 16-key
// block is two full score blocks.
template <int NR>
constexpr int kKeysPerBlock = NR == 1 ? 8 : 12 / NR;

// scores[r·ld + j] = scale · (q_r · k_j) for NR query heads and the NK keys j0..j0+NK−1 of the
// run at `rows`. Each K slice loaded feeds NR FMAs and each q slice NK, in NR·NK independent
// chains; the chains are reduced together by hsum8/hsum4 instead of one horizontal sum per
// (key, head).
template <pagoda_dtype_t DT, int NR, int NK>
void score_block(const float *q, int64_t head_dim, const void *rows, int64_t j0, float scale,
                 float *scores, int64_t ld, const RowPrefetch &pf) {
    constexpr int NA = (NR * NK + 3) / 4 * 4;  // whole groups of four for the reduction
    constexpr int64_t bytes = DT == PAGODA_DTYPE_F32 ? 4 : 2;
    const int64_t row_bytes = head_dim * bytes, pf_offset = j0 * row_bytes;
    const void *k = nth_row<DT>(rows, j0, head_dim);
    scores += j0;
    __m256 acc[NA];
#pragma GCC unroll 16
    for (int i = 0; i < NA; ++i) acc[i] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= head_dim; d += 8) {
        // One prefetch per 64-byte line of the rows read.
        if ((d * bytes) % 64 == 0)
#pragma GCC unroll 16
            for (int j = 0; j < NK; ++j) prefetch_at(pf, pf_offset + j * row_bytes + d * bytes);
#pragma GCC unroll 16
        for (int j = 0; j < NK; ++j) {
            const __m256 kv = load8<DT>(nth_row<DT>(k, j, head_dim), d);
#pragma GCC unroll 16
            for (int r = 0; r < NR; ++r)
                acc[j * NR + r] =
                    _mm256_fmadd_ps(_mm256_loadu_ps(q + r * head_dim + d), kv, acc[j * NR + r]);
        }
    }
    alignas(32) float dots[NA];
    int i = 0;
    for (; i + 8 <= NA; i += 8) _mm256_store_ps(dots + i, hsum8(acc + i));
    if (i < NA) _mm_store_ps(dots + i, hsum4(acc + i));
    for (; d < head_dim; ++d)
        for (int j = 0; j < NK; ++j) {
            const float x = load1<DT>(nth_row<DT>(k, j, head_dim), d);
            for (int r = 0; r < NR; ++r) dots[j * NR + r] += q[r * head_dim + d] * x;
        }
    for (int j = 0; j < NK; ++j)
        for (int r = 0; r < NR; ++r) scores[r * ld + j] = scale * dots[j * NR + r];
}

// The `n` keys of a run against NR query heads: blocks of kKeysPerBlock keys, then the rest in
// blocks of 8, 4, 2 and 1.
template <pagoda_dtype_t DT, int NR>
void score_heads(const float *q, int64_t head_dim, const void *k, int64_t n, float scale,
                 float *scores, int64_t ld, const RowPrefetch &pf) {
    constexpr int NK = kKeysPerBlock<NR>;
    int64_t j = 0;
    if constexpr (NK == 3) {
        // Runs of 16 keys (a common block size) go 3+3+3+3+2+2, not 3+3+3+3+3+1: a lone key has
        // only NR chains, so it runs latency-bound.
        for (; n - j >= 5 || n - j == 3; j += 3)
            score_block<DT, NR, 3>(q, head_dim, k, j, scale, scores, ld, pf);
    } else {
        for (; j + NK <= n; j += NK)
            score_block<DT, NR, NK>(q, head_dim, k, j, scale, scores, ld, pf);
    }
    if constexpr (NK > 8)
        if (n - j >= 8) score_block<DT, NR, 8>(q, head_dim, k, j, scale, scores, ld, pf), j += 8;
    if constexpr (NK > 4)
        if (n - j >= 4) score_block<DT, NR, 4>(q, head_dim, k, j, scale, scores, ld, pf), j += 4;
    if constexpr (NK > 2)
        for (; n - j >= 2; j += 2) score_block<DT, NR, 2>(q, head_dim, k, j, scale, scores, ld, pf);
    if (n - j == 1) score_block<DT, NR, 1>(q, head_dim, k, j, scale, scores, ld, pf);
}

template <pagoda_dtype_t DT>
void scores_t(const float *q, int64_t n_heads, int64_t head_dim, const void *k, int64_t n,
              float scale, float *scores, int64_t ld, const RowPrefetch &pf) {
    // Query heads four at a time; the run's rows stay in L1 between passes. Only the first pass
    // prefetches.
    const RowPrefetch none{nullptr, 0};
    int64_t r = 0;
    for (; r + 4 <= n_heads; r += 4)
        score_heads<DT, 4>(q + r * head_dim, head_dim, k, n, scale, scores + r * ld, ld,
                           r == 0 ? pf : none);
    const float *qr = q + r * head_dim;
    float *sr = scores + r * ld;
    const RowPrefetch &p = r == 0 ? pf : none;
    switch (n_heads - r) {
        case 3: score_heads<DT, 3>(qr, head_dim, k, n, scale, sr, ld, p); break;
        case 2: score_heads<DT, 2>(qr, head_dim, k, n, scale, sr, ld, p); break;
        case 1: score_heads<DT, 1>(qr, head_dim, k, n, scale, sr, ld, p); break;
        default: break;
    }
}

// acc_r[d, d + 8·NC) += Σ_j w[r·ld + j] · v_j[d, d + 8·NC) for NR heads: the slice of every
// head's accumulator stays in registers while the n rows stream past, so the accumulators are
// loaded and stored once per run instead of once per row.
template <pagoda_dtype_t DT, int NR, int NC>
void accumulate_slice(const float *w, int64_t ld, int64_t head_dim, const void *v, int64_t n,
                      float *acc, int64_t d, const RowPrefetch &pf) {
    constexpr int64_t bytes = DT == PAGODA_DTYPE_F32 ? 4 : 2;
    // Accumulator c·NR + r is slice c of head r. One flat array with unrolled loops, because
    // GCC 12 keeps a two-dimensional one in memory as well as in registers, storing every
    // accumulator on every row.
    __m256 a[NC * NR];
#pragma GCC unroll 16
    for (int i = 0; i < NC * NR; ++i)
        a[i] = _mm256_loadu_ps(acc + (i % NR) * head_dim + d + 8 * (i / NR));
    for (int64_t j = 0; j < n; ++j) {
        const void *row = nth_row<DT>(v, j, head_dim);
        for (int64_t o = 0; o < 8 * NC * bytes; o += 64)
            prefetch_at(pf, (j * head_dim + d) * bytes + o);
        __m256 p[NR];
#pragma GCC unroll 16
        for (int r = 0; r < NR; ++r) p[r] = _mm256_broadcast_ss(w + r * ld + j);
        // Each slice is used as soon as it is widened, so only one needs a register.
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) {
            const __m256 x = load8<DT>(row, d + 8 * c);
#pragma GCC unroll 16
            for (int r = 0; r < NR; ++r) a[c * NR + r] = _mm256_fmadd_ps(p[r], x, a[c * NR + r]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NC * NR; ++i)
        _mm256_storeu_ps(acc + (i % NR) * head_dim + d + 8 * (i / NR), a[i]);
}

template <pagoda_dtype_t DT, int NR>
void accumulate_rows(const float *w, int64_t ld, int64_t head_dim, const void *v, int64_t n,
                     float *acc, const RowPrefetch &pf) {
    constexpr int NC = kSlices<NR>;
    int64_t d = 0;
    for (; d + 8 * NC <= head_dim; d += 8 * NC)
        accumulate_slice<DT, NR, NC>(w, ld, head_dim, v, n, acc, d, pf);
    for (; d + 8 <= head_dim; d += 8)
        accumulate_slice<DT, NR, 1>(w, ld, head_dim, v, n, acc, d, pf);
    for (; d < head_dim; ++d)
        for (int64_t j = 0; j < n; ++j) {
            const float x = load1<DT>(nth_row<DT>(v, j, head_dim), d);
            for (int r = 0; r < NR; ++r) acc[r * head_dim + d] += w[r * ld + j] * x;
        }
}

template <pagoda_dtype_t DT>
void accumulate_t(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim,
                  const void *v, int64_t n, float *acc, const RowPrefetch &pf) {
    const RowPrefetch none{nullptr, 0};
    int64_t r = 0;
    for (; r + 4 <= n_heads; r += 4)
        accumulate_rows<DT, 4>(weights + r * ld, ld, head_dim, v, n, acc + r * head_dim,
                               r == 0 ? pf : none);
    const float *wr = weights + r * ld;
    float *ar = acc + r * head_dim;
    const RowPrefetch &p = r == 0 ? pf : none;
    switch (n_heads - r) {
        case 3: accumulate_rows<DT, 3>(wr, ld, head_dim, v, n, ar, p); break;
        case 2: accumulate_rows<DT, 2>(wr, ld, head_dim, v, n, ar, p); break;
        case 1: accumulate_rows<DT, 1>(wr, ld, head_dim, v, n, ar, p); break;
        default: break;
    }
}

void scores(const float *q, int64_t n_heads, int64_t head_dim, const void *k, pagoda_dtype_t dtype,
            int64_t n, float scale, float *s, int64_t ld, RowPrefetch pf) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16:
            return scores_t<PAGODA_DTYPE_BF16>(q, n_heads, head_dim, k, n, scale, s, ld, pf);
        case PAGODA_DTYPE_F16:
            return scores_t<PAGODA_DTYPE_F16>(q, n_heads, head_dim, k, n, scale, s, ld, pf);
        default: return scores_t<PAGODA_DTYPE_F32>(q, n_heads, head_dim, k, n, scale, s, ld, pf);
    }
}

void accumulate(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim, const void *v,
                pagoda_dtype_t dtype, int64_t n, float *acc, RowPrefetch pf) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16:
            return accumulate_t<PAGODA_DTYPE_BF16>(weights, ld, n_heads, head_dim, v, n, acc, pf);
        case PAGODA_DTYPE_F16:
            return accumulate_t<PAGODA_DTYPE_F16>(weights, ld, n_heads, head_dim, v, n, acc, pf);
        default:
            return accumulate_t<PAGODA_DTYPE_F32>(weights, ld, n_heads, head_dim, v, n, acc, pf);
    }
}

void softmax_tile(float *scores, int64_t ld, int64_t n_heads, int64_t n, float *m, float *l,
                  float *acc, int64_t head_dim) {
    for (int64_t r = 0; r < n_heads; ++r) {
        float *s = scores + r * ld;
        int64_t j = 0;
        __m256 vmax = _mm256_set1_ps(m[r]);
        for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(s + j));
        float new_max = hmax(vmax);
        for (; j < n; ++j) new_max = s[j] > new_max ? s[j] : new_max;

        // The first tile has m = −∞, so the empty accumulator is "rescaled" by exp(−∞) = 0.
        const float rescale = expf(m[r] - new_max);
        const __m256 vnew_max = _mm256_set1_ps(new_max);
        __m256 vsum = _mm256_setzero_ps();
        for (j = 0; j + 8 <= n; j += 8) {
            const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), vnew_max));
            _mm256_storeu_ps(s + j, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        float sum = hsum(vsum);
        for (; j < n; ++j) {
            s[j] = expf(s[j] - new_max);
            sum += s[j];
        }
        l[r] = l[r] * rescale + sum;
        if (rescale != 1.0f) {
            float *a = acc + r * head_dim;
            const __m256 c = _mm256_set1_ps(rescale);
            int64_t d = 0;
            for (; d + 8 <= head_dim; d += 8)
                _mm256_storeu_ps(a + d, _mm256_mul_ps(c, _mm256_loadu_ps(a + d)));
            for (; d < head_dim; ++d) a[d] *= rescale;
        }
        m[r] = new_max;
    }
}

constexpr AttentionRowKernels kAvx2 = {scores, softmax_tile, accumulate, softcap_f32_avx2};

}  // namespace

const AttentionRowKernels &attention_rows_avx2() { return kAvx2; }

}  // namespace pagoda::cpu
