// The AVX2/FMA/F16C inner loops of paged attention (see paged_attention_rows.hpp). Compiled with
// -mavx2 -mfma -mf16c, so everything here has internal linkage and no shared inline header is
// included: the linker must never pick an AVX2 copy of a helper for the portable code.
//
// Decode reads every cached row once per step, so these loops are built around reading a K or V
// row once per GQA group and widening bf16/f16 to f32 in registers, never through memory.
#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "paged_attention_rows.hpp"

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

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// e^x for x ≤ 0 (softmax weights): e^x = 2^k · e^f with k = round(x / ln 2) and |f| ≤ ln2 / 2,
// e^f by its Taylor polynomial to degree 6 (truncation below 2e-7 relative). Inputs below −87
// are clamped, giving ~1e-38 instead of 0, which no sum of weights can notice.
__m256 exp8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // ln 2 split in two so that k · ln2_hi is exact (Cody and Waite).
    __m256 f = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
    f = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), f);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i two_k =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_k));
}

// How many 8-wide slices of a row to keep in flight per query head: enough independent FMA
// chains (NR · NC of them) to cover the FMA latency, few enough to stay in 16 registers.
template <int NR>
constexpr int kSlices = NR <= 2 ? 4 : 2;

// out[r] = q_r · row for NR query rows sharing one loaded K row.
template <pagoda_dtype_t DT, int NR>
void dot_rows(const float *q, int64_t head_dim, const void *row, float *out) {
    constexpr int NC = kSlices<NR>;
    __m256 acc[NC][NR];
    for (int c = 0; c < NC; ++c)
        for (int r = 0; r < NR; ++r) acc[c][r] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 * NC <= head_dim; d += 8 * NC) {
        for (int c = 0; c < NC; ++c) {
            const __m256 k = load8<DT>(row, d + 8 * c);
            for (int r = 0; r < NR; ++r)
                acc[c][r] =
                    _mm256_fmadd_ps(_mm256_loadu_ps(q + r * head_dim + d + 8 * c), k, acc[c][r]);
        }
    }
    for (; d + 8 <= head_dim; d += 8) {
        const __m256 k = load8<DT>(row, d);
        for (int r = 0; r < NR; ++r)
            acc[0][r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * head_dim + d), k, acc[0][r]);
    }
    for (int r = 0; r < NR; ++r) {
        __m256 sum = acc[0][r];
        for (int c = 1; c < NC; ++c) sum = _mm256_add_ps(sum, acc[c][r]);
        out[r] = hsum(sum);
    }
    for (; d < head_dim; ++d) {
        const float k = load1<DT>(row, d);
        for (int r = 0; r < NR; ++r) out[r] += q[r * head_dim + d] * k;
    }
}

template <pagoda_dtype_t DT, int NR>
void score_rows(const float *q, int64_t head_dim, const void *row, float scale, float *scores,
                int64_t ld) {
    float dots[NR];
    dot_rows<DT, NR>(q, head_dim, row, dots);
    for (int r = 0; r < NR; ++r) scores[r * ld] = scale * dots[r];
}

template <pagoda_dtype_t DT>
void scores_t(const float *q, int64_t n_heads, int64_t head_dim, const void *k, int64_t n,
              float scale, float *scores, int64_t ld) {
    for (int64_t j = 0; j < n; ++j) {
        const void *row = nth_row<DT>(k, j, head_dim);
        // Query heads four at a time: the row stays in L1, each pass widens it again.
        int64_t r = 0;
        for (; r + 4 <= n_heads; r += 4)
            score_rows<DT, 4>(q + r * head_dim, head_dim, row, scale, scores + r * ld + j, ld);
        const float *qr = q + r * head_dim;
        float *sr = scores + r * ld + j;
        switch (n_heads - r) {
            case 3: score_rows<DT, 3>(qr, head_dim, row, scale, sr, ld); break;
            case 2: score_rows<DT, 2>(qr, head_dim, row, scale, sr, ld); break;
            case 1: score_rows<DT, 1>(qr, head_dim, row, scale, sr, ld); break;
            default: break;
        }
    }
}

// acc_r[d, d + 8·NC) += Σ_j w[r·ld + j] · v_j[d, d + 8·NC) for NR heads: the slice of every
// head's accumulator stays in registers while the n rows stream past, so the accumulators are
// loaded and stored once per run instead of once per row.
template <pagoda_dtype_t DT, int NR, int NC>
void accumulate_slice(const float *w, int64_t ld, int64_t head_dim, const void *v, int64_t n,
                      float *acc, int64_t d) {
    __m256 a[NC][NR];
    for (int c = 0; c < NC; ++c)
        for (int r = 0; r < NR; ++r) a[c][r] = _mm256_loadu_ps(acc + r * head_dim + d + 8 * c);
    for (int64_t j = 0; j < n; ++j) {
        const void *row = nth_row<DT>(v, j, head_dim);
        __m256 x[NC];
        for (int c = 0; c < NC; ++c) x[c] = load8<DT>(row, d + 8 * c);
        for (int r = 0; r < NR; ++r) {
            const __m256 p = _mm256_broadcast_ss(w + r * ld + j);
            for (int c = 0; c < NC; ++c) a[c][r] = _mm256_fmadd_ps(p, x[c], a[c][r]);
        }
    }
    for (int c = 0; c < NC; ++c)
        for (int r = 0; r < NR; ++r) _mm256_storeu_ps(acc + r * head_dim + d + 8 * c, a[c][r]);
}

template <pagoda_dtype_t DT, int NR>
void accumulate_rows(const float *w, int64_t ld, int64_t head_dim, const void *v, int64_t n,
                     float *acc) {
    constexpr int NC = kSlices<NR>;
    int64_t d = 0;
    for (; d + 8 * NC <= head_dim; d += 8 * NC)
        accumulate_slice<DT, NR, NC>(w, ld, head_dim, v, n, acc, d);
    for (; d + 8 <= head_dim; d += 8) accumulate_slice<DT, NR, 1>(w, ld, head_dim, v, n, acc, d);
    for (; d < head_dim; ++d)
        for (int64_t j = 0; j < n; ++j) {
            const float x = load1<DT>(nth_row<DT>(v, j, head_dim), d);
            for (int r = 0; r < NR; ++r) acc[r * head_dim + d] += w[r * ld + j] * x;
        }
}

template <pagoda_dtype_t DT>
void accumulate_t(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim,
                  const void *v, int64_t n, float *acc) {
    int64_t r = 0;
    for (; r + 4 <= n_heads; r += 4)
        accumulate_rows<DT, 4>(weights + r * ld, ld, head_dim, v, n, acc + r * head_dim);
    const float *wr = weights + r * ld;
    float *ar = acc + r * head_dim;
    switch (n_heads - r) {
        case 3: accumulate_rows<DT, 3>(wr, ld, head_dim, v, n, ar); break;
        case 2: accumulate_rows<DT, 2>(wr, ld, head_dim, v, n, ar); break;
        case 1: accumulate_rows<DT, 1>(wr, ld, head_dim, v, n, ar); break;
        default: break;
    }
}

void scores(const float *q, int64_t n_heads, int64_t head_dim, const void *k, pagoda_dtype_t dtype,
            int64_t n, float scale, float *s, int64_t ld) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16:
            return scores_t<PAGODA_DTYPE_BF16>(q, n_heads, head_dim, k, n, scale, s, ld);
        case PAGODA_DTYPE_F16:
            return scores_t<PAGODA_DTYPE_F16>(q, n_heads, head_dim, k, n, scale, s, ld);
        default: return scores_t<PAGODA_DTYPE_F32>(q, n_heads, head_dim, k, n, scale, s, ld);
    }
}

void accumulate(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim, const void *v,
                pagoda_dtype_t dtype, int64_t n, float *acc) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16:
            return accumulate_t<PAGODA_DTYPE_BF16>(weights, ld, n_heads, head_dim, v, n, acc);
        case PAGODA_DTYPE_F16:
            return accumulate_t<PAGODA_DTYPE_F16>(weights, ld, n_heads, head_dim, v, n, acc);
        default: return accumulate_t<PAGODA_DTYPE_F32>(weights, ld, n_heads, head_dim, v, n, acc);
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

constexpr AttentionRowKernels kAvx2 = {scores, softmax_tile, accumulate};

}  // namespace

const AttentionRowKernels &attention_rows_avx2() { return kAvx2; }

}  // namespace pagoda::cpu
