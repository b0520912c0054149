// The decoded-chunk route of the block GEMV (gemv.hpp), shared by the AVX2 and portable builds:
// each passes its own block decoder and f32 kernel, so this file holds no vector code and may
// be built without AVX2 flags.
#include <algorithm>

#include "gemv.hpp"

namespace pagoda::cpu {

void gemv_decoded_chunks(const GemvProblem &p, int64_t row_begin, int64_t row_end,
                         BlockDecodeFn decode, GemvRowsFn f32_rows) {
    alignas(32) float chunk[kGemvTileRows * kBlockChunkValues];
    const auto *w = static_cast<const unsigned char *>(p.w);
    for (int64_t j = row_begin; j < row_end; j += kGemvTileRows) {
        const int64_t tile_rows = std::min(kGemvTileRows, row_end - j);
        for (int64_t c0 = 0; c0 < p.k; c0 += kBlockChunkValues) {
            const int64_t kc = std::min(kBlockChunkValues, p.k - c0);
            const unsigned char *src = w + j * p.w_row_bytes + c0 / p.w_block_values * p.w_block_bytes;
            for (int64_t r = 0; r < tile_rows; ++r)
                decode(p.w_dtype, src + r * p.w_row_bytes, kc / p.w_block_values, chunk + r * kc);
            // The decoded chunk as an f32 problem; its partial sums add into y after the first.
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
            f32_rows(q, 0, tile_rows);
        }
    }
}

}  // namespace pagoda::cpu
