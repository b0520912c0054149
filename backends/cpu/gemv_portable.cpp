// Portable build of the small-m product (see gemv.hpp), for x86-64 processors without AVX2 and
// for other architectures. One W row at a time against every x row; the row stays in L1 between
// x rows, so memory still sees W once.
#include <algorithm>

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

// Block-quantized W: each row decoded a chunk at a time by the reference decoders, then the f32
// loop on the chunk, its partial sums added into y after the first chunk.
void block_rows(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    float chunk[kBlockChunkValues];
    const auto *w = static_cast<const unsigned char *>(p.w);
    for (int64_t j = row_begin; j < row_end; ++j)
        for (int64_t c0 = 0; c0 < p.k; c0 += kBlockChunkValues) {
            const int64_t kc = std::min(kBlockChunkValues, p.k - c0);
            plugin::decode_blocks(p.w_dtype,
                                  w + j * p.w_row_bytes + c0 / p.w_block_values * p.w_block_bytes,
                                  kc / p.w_block_values, chunk);
            GemvProblem q = p;
            q.n = 1;
            q.k = kc;
            q.x = p.x + c0;
            q.w = chunk;
            q.ldw = kc;
            q.bias = c0 == 0 && p.bias != nullptr ? p.bias + j : nullptr;
            q.y = p.y + j;
            q.accumulate = c0 == 0 ? p.accumulate : true;
            rows<PAGODA_DTYPE_F32>(q, 0, 1);
        }
}

}  // namespace

void gemv_portable(const GemvProblem &p, int64_t row_begin, int64_t row_end) {
    if (p.w_block_values > 1) return block_rows(p, row_begin, row_end);
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
