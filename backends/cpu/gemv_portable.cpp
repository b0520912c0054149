// Portable build of the small-m product (see gemv.hpp), for x86-64 processors without AVX2 and
// for other architectures. One W row at a time against every x row; the row stays in L1 between
// x rows, so memory still sees W once.
#include "block_formats.hpp"
#include "gemv.hpp"
#include "half.hpp"

namespace pagoda::cpu {

namespace {

template <pagoda_dtype_t D>
void rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    const int64_t elem = D == PAGODA_DTYPE_F32 ? 4 : 2;
    for (int64_t j = row_begin; j < row_end; ++j) {
        const void *w = static_cast<const char *>(p.w) + j * p.ldw * elem;
        for (int64_t i = 0; i < p.m; ++i) {
            const float *x = p.x + i * p.ldx;
            // Four partial sums shorten the dependency chain and let the compiler vectorise.
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            int64_t c = 0;
            for (; c + 4 <= p.k; c += 4) {
                s0 += load_as_f32<D>(w, c) * x[c];
                s1 += load_as_f32<D>(w, c + 1) * x[c + 1];
                s2 += load_as_f32<D>(w, c + 2) * x[c + 2];
                s3 += load_as_f32<D>(w, c + 3) * x[c + 3];
            }
            for (; c < p.k; ++c) s0 += load_as_f32<D>(w, c) * x[c];
            float v = (s0 + s1) + (s2 + s3);
            float &y = p.y[i * p.ldy + j];
            if (p.bias != nullptr) v += p.bias[j];
            if (p.accumulate) v += y;
            y = v;
        }
    }
}

}  // namespace

void gemv_portable(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    if (p.w_block_values > 1)
        return gemv_decoded_chunks(p, row_begin, row_end, formats::decode_blocks, gemv_portable);
    switch (p.w_dtype) {
        case PAGODA_DTYPE_BF16:
            rows<PAGODA_DTYPE_BF16>(p, row_begin, row_end);
            break;
        case PAGODA_DTYPE_F16:
            rows<PAGODA_DTYPE_F16>(p, row_begin, row_end);
            break;
        default:
            rows<PAGODA_DTYPE_F32>(p, row_begin, row_end);
            break;
    }
}

}  // namespace pagoda::cpu
