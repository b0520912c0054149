// The 8-bit-activation route of the small-m product on block-quantized W (ops.h's
// PAGODA_MATMUL_QUANTIZE_X): x is rounded to int8 per run of 32 values with an f32 scale, W's
// blocks are decoded to int8 runs with their f32 scales (and mins), and each 32 weights meet
// 32 activations in one integer multiply-add of bytes. The float route (gemv_blocks_avx2.cpp)
// spends 4-6 instructions converting each 8 weights to f32; here a run of 32 costs about ten.
//
// The CPU backend takes the leave for the few x rows where it pays (q8x_max_rows): each x row
// costs the int8 route a pass of integer products over the tile (which stays in cache), the
// float route only f32 FMAs on values it decoded once, so from some m on the float route wins,
// the sooner the more a type's unpacking costs. Measured with the int8 route open to m = 8
// (pagoda-bench-kernels --bench gemv,gemv_q8x --repeats 3 --min-time 0.15, 2 threads, two
// rounds), float / int8 time, ranges over 4096², 4096 × 11008 and 11008 × 4096:
//   Q8_0 1.95-2.37× at m = 1, 1.38-1.50× at m = 3-4, 1.03-1.13× at m = 8;
//   Q6_K 1.37-1.65× at m = 1, 1.04-1.12× at m = 4, 0.77-0.84× at m = 8;
//   Q4_0, Q4_K, Q5_K 1.18-1.47× at m = 2, 0.85-1.12× at m = 3.
// So Q8_0 up to eight rows, Q6_K four, the others two.
#pragma once

#include <cstdint>

#include "gemv.hpp"

namespace pagoda::cpu {

// Activations rounded per run of 32: row i's value c is scale[i·runs + c/32] · q[i·k + c];
// sum[i·runs + r] = scale · Σ q over run r (what W's mins multiply).
inline constexpr int64_t kQ8Run = 32;
struct Q8Rows {
    int64_t m, k;
    const int8_t *q;
    const float *scale;
    const float *sum;
};

// Up to this m the backend computes on int8 x for W of this type when the flag allows it (0 for
// the types the route does not serve). `avx512`: the AVX-512 build runs (Q8_0 only), which
// loads each pair of W blocks once for eight x rows and at m = 8 read 13.5-14.2 GB/s of Q8_0
// against the float route's 6.3-6.8: sixteen rows there.
int64_t q8x_max_rows(pagoda_dtype_t w_dtype, bool avx512);

// Rounds rows x[i·ldx .. +k) (k a multiple of 32) as ops.h specifies: d = max|x| / 127 per run,
// q = x / d to nearest even (0 where d = 0). Both builds round bit for bit alike.
void quantize_rows_portable(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                            float *scale, float *sum);
void quantize_rows_avx2(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                        float *scale, float *sum);

// Outputs [row_begin, row_end) of every row of y from the quantized x.
void gemv_q8x_portable(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end);
void gemv_q8x_avx2(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end);
// The AVX-512 build for Q8_0 W only (BW, VL, VNNI: CpuFeatures::avx512_vnni).
void gemv_q8x_avx512(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end);

// The tiled builds for Q8_0 W at several x rows: gemv_q8x_tiles_avx512.cpp (AVX-512 VNNI) and
// gemv_q8x_tiles_avx2.cpp. Both regroup W's and x's blocks, eight at a time, so that each
// block's bytes keep to the same lanes across registers and one conversion to f32 serves eight
// blocks; a tile of W rows meets up to kQ8TileMaxRows x rows while it is held. k is a multiple
// of 256. At the 1B model's shapes (pagoda-bench-kernels --shapes llama1b --bench gemv_q8x,
// matmul, 2 threads), GB/s of Q8_0 at m = 8 and 16, GFLOP/s at 64 and 512:
//   AVX-512: 13.7-16.6 and 10.2-11.9 (row build 10.7-12.1, 5.7-6.4); 311-395 (157-176) and
//   335-402, where sgemm on widened panels ran 250-277.
//   AVX2 (--isa avx2): 7.2-9.1 and 4.7-5.1 (row build 3.9-4.1; the float GEMV 5.3-6.0 at 8,
//   3.7-4.0 at 16); 135-166 at 64 (row build 59-67). A 1B Q8_0 prefill of 512 tokens ran 74-78
//   tokens/s on it, 84-87 on sgemm with OpenBLAS held to its AVX2 kernels.
inline constexpr int64_t kQ8TileMaxRows = 16;
// x as the builds read it: q is m·k bytes regrouped by the build's regroup_q8x_rows_*; scale
// is m·2·(k/32) floats for the AVX-512 build (each run's scale twice, as its lanes pair up),
// x's own m·(k/32) for the AVX2 one.
struct Q8TileRows {
    int64_t m, k;
    const unsigned char *q;
    const float *scale;
};
// Whether a tiled build takes this product (the AVX-512 one where `avx512`, else AVX2's): from
// 6 rows with AVX-512, whose row-at-a-time build is the faster below; from 2 to 64 with AVX2,
// where sgemm (OpenBLAS's AVX2 kernels) led at prefill sizes.
bool q8x_tiles_serve(pagoda_dtype_t w_dtype, int64_t m, int64_t k, bool avx2, bool avx512);
// AVX-512: per group of 8 runs (256 values), four 64-byte registers of 8-byte pieces, each
// byte plus 128 (dpbusd's unsigned operand).
void regroup_q8x_rows_avx512(const Q8Rows &x, unsigned char *q, float *scale);
void gemv_q8x_tiles_avx512(const GemvProblem &p, const Q8TileRows &x, int64_t row_begin, int64_t row_end);
// AVX2: per group of 8 runs, eight 32-byte registers of 4-byte pieces.
void regroup_q8x_rows_avx2(const Q8Rows &x, unsigned char *q);
void gemv_q8x_tiles_avx2(const GemvProblem &p, const Q8TileRows &x, int64_t row_begin, int64_t row_end);

}  // namespace pagoda::cpu
