// The small-m matrix product `y = x·Wᵀ (+bias) (+y)` for decode-sized batches, where the cost is
// streaming W from memory once. Two builds of the same loop: gemv_avx2.cpp (AVX2/FMA/F16C,
// compiled with those flags and called only when cpuid has them) and gemv_portable.cpp.
#pragma once

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

// A checked matmul with strides resolved (never 0).
struct GemvProblem {
    int64_t m, n, k;
    const float *x;
    int64_t ldx;
    const void *w;  // f32, bf16, f16 or a quantized block type as w_dtype says
    pagoda_dtype_t w_dtype;
    int64_t ldw;  // in values, as ops.h counts strides
    // W's storage: bytes between rows, and its blocks (1 value of the element size for the
    // plain types), so the kernels need no table of block shapes.
    int64_t w_row_bytes;
    int64_t w_block_values, w_block_bytes;
    const float *bias;  // or nullptr
    float *y;
    int64_t ldy;
    bool accumulate;
    // ops.h's PAGODA_MATMUL_QUANTIZE_X: x may be rounded to int8 (gemv_q8x.hpp), and with
    // PAGODA_MATMUL_QUANTIZE_X_BLOCK per W block (gemv_q8k.hpp).
    bool quantize_x;
    bool quantize_x_block;
};

// W rows handled together by the vector kernel; callers split work on multiples of it so that
// each chunk keeps whole tiles.
inline constexpr int64_t kGemvTileRows = 4;

// Rows of a block-quantized W are decoded this many values at a time into an f32 buffer (4 rows ×
// 4 KiB) that the f32 kernel then streams for every x row: decoding once per tile serves all m
// rows of x. A multiple of every block (32 and 256). Measured on the 110M shape it beat 256
// values end to end; at k = 4096 the buffer and the x row fill L1 and 256 was faster, so the
// best size depends on the shape.
inline constexpr int64_t kBlockChunkValues = 1024;

// Computes outputs [row_begin, row_end) of every row of y (all m rows of x per pass over W).
using GemvRowsFn = void (*)(const GemvProblem &p, int64_t row_begin, int64_t row_end);
void gemv_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end);
void gemv_portable(const GemvProblem &p, int64_t row_begin, int64_t row_end);

// The AVX2 product on block-quantized W (gemv_blocks_avx2.cpp), which gemv_avx2 hands them to.
void gemv_blocks_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end);

// Decodes `blocks` whole blocks of a block type to f32 (formats::decode_blocks or its AVX2 build).
using BlockDecodeFn = void (*)(pagoda_dtype_t dtype, const void *src, int64_t blocks, float *dst);

// The decoded-chunk route for block W (gemv_chunks.cpp): per tile of rows and chunk of k,
// `decode` into an L1 buffer, then `f32_rows` on it. Both builds use it with their own pair.
void gemv_decoded_chunks(const GemvProblem &p, int64_t row_begin, int64_t row_end,
                         BlockDecodeFn decode, GemvRowsFn f32_rows);

}  // namespace pagoda::cpu
