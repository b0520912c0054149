// The portable inner loops of paged attention, for processors without AVX2 (see
// paged_attention_rows.hpp). Plain loops the compiler may vectorise; the cache dtype is a
// template parameter so the conversion sits inside the loop without a branch.
#include "paged_attention_rows.hpp"

#include <algorithm>
#include <cmath>

#include "half.hpp"
#include "softcap.hpp"

namespace pagoda::cpu {

namespace {

template <pagoda_dtype_t DT>
const void *nth_row(const void *rows, int64_t j, int64_t head_dim) {
    constexpr int64_t bytes = DT == PAGODA_DTYPE_F32 ? 4 : 2;
    return static_cast<const unsigned char *>(rows) + j * head_dim * bytes;
}

// Prefetches row j of the run the caller reads next (see RowPrefetch).
template <pagoda_dtype_t DT>
void prefetch_row(const RowPrefetch &pf, int64_t j, int64_t head_dim) {
    constexpr int64_t bytes = DT == PAGODA_DTYPE_F32 ? 4 : 2;
    const int64_t row_bytes = head_dim * bytes;
    for (int64_t o = j * row_bytes; o < (j + 1) * row_bytes && o < pf.bytes; o += 64)
        __builtin_prefetch(static_cast<const char *>(pf.next) + o);
}

template <pagoda_dtype_t DT>
void scores_t(const float *q, int64_t n_heads, int64_t head_dim, const void *k, int64_t n,
              float scale, float *scores, int64_t ld, const RowPrefetch &pf) {
    for (int64_t j = 0; j < n; ++j) {
        prefetch_row<DT>(pf, j, head_dim);
        const void *row = nth_row<DT>(k, j, head_dim);
        for (int64_t r = 0; r < n_heads; ++r) {
            const float *qr = q + r * head_dim;
            float dot = 0.0f;
            for (int64_t d = 0; d < head_dim; ++d) dot += qr[d] * load_as_f32<DT>(row, d);
            scores[r * ld + j] = scale * dot;
        }
    }
}

template <pagoda_dtype_t DT>
void accumulate_t(const float *weights, int64_t ld, int64_t n_heads, int64_t head_dim,
                  const void *v, int64_t n, float *acc, const RowPrefetch &pf) {
    for (int64_t j = 0; j < n; ++j) {
        prefetch_row<DT>(pf, j, head_dim);
        const void *row = nth_row<DT>(v, j, head_dim);
        for (int64_t r = 0; r < n_heads; ++r) {
            const float p = weights[r * ld + j];
            float *ar = acc + r * head_dim;
            for (int64_t d = 0; d < head_dim; ++d) ar[d] += p * load_as_f32<DT>(row, d);
        }
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
        float new_max = m[r];
        for (int64_t j = 0; j < n; ++j) new_max = std::max(new_max, s[j]);
        // The first tile has m = −∞, so the empty accumulator is "rescaled" by exp(−∞) = 0.
        const float rescale = std::exp(m[r] - new_max);
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
            s[j] = std::exp(s[j] - new_max);
            sum += s[j];
        }
        l[r] = l[r] * rescale + sum;
        if (rescale != 1.0f) {
            float *ar = acc + r * head_dim;
            for (int64_t d = 0; d < head_dim; ++d) ar[d] *= rescale;
        }
        m[r] = new_max;
    }
}

constexpr AttentionRowKernels kPortable = {scores, softmax_tile, accumulate, softcap_f32};

}  // namespace

const AttentionRowKernels &attention_rows_portable() { return kPortable; }

}  // namespace pagoda::cpu
