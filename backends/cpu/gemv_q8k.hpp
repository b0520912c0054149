// The whole-block int8 route of the small-m product on K-quant W (Q4_K, Q5_K, Q6_K; ops.h's
// PAGODA_MATMUL_QUANTIZE_X_BLOCK): x is rounded to int8 with one f32 scale per 256 values, the
// length of W's blocks, so a block's eight runs meet x's in integer units throughout. W's
// sub-block scales (and mins) are small integers under the block's f16 scales, so they multiply
// the byte products in int16 → int32 (`madd`), the block's sum stays an int32 vector, and only
// the block's end costs float work: one convert and one multiply-add by d_w · d_x (two with
// mins). The 32-value route (gemv_q8x.hpp) pays a convert and a multiply-add per run and row,
// the work that bound it. llama.cpp's Q8_K activations do the same arithmetic.
//
// Mins (Q4_K, Q5_K) and Q6_K's stored offset of 32 come off through x's sums per 16 values,
// also in integers: Σ m_t · Σ_run x and 32 · Σ sc_g · Σ_group x.
#pragma once

#include <cstdint>

#include "gemv.hpp"

namespace pagoda::cpu {

inline constexpr int64_t kQ8Block = 256, kQ8Group = 16;

// Row i's value c is scale[i·(k/256) + c/256] · q[i·k + c]; sum[i·(k/16) + g] = Σ q over values
// 16g .. 16g+15 of row i.
struct Q8BlockRows {
    int64_t m, k;
    const int8_t *q;
    const float *scale;
    const int16_t *sum;
};

// Whether the route serves W of this type (the K types, whose blocks are 256 values).
bool q8k_serves(pagoda_dtype_t w_dtype);

// Up to this m the backend takes the leave for W of this type (0 where it does not serve it).
// Each W run is decoded once for four x rows (AVX2) or eight (AVX-512), so a row costs a
// multiply-add of bytes and a madd per run; the float route costs two FMAs per run and row on
// values it decoded once. Measured (pagoda-bench-kernels --bench gemv,gemv_q8k, 2 threads,
// 4096² to 11008 × 4096, GB/s of weights): at m = 8 the float route ran Q4_K 3.4-3.7, Q5_K
// 3.9-4.0, Q6_K 4.6-5.4, this one 5.2-7.2 (AVX2) and 8.4-12.1 (AVX-512); at m = 16 this one
// 2.8-3.7 and 4.2-6.7. So up to 16 rows.
int64_t q8k_max_rows(pagoda_dtype_t w_dtype);

// Rounds rows x[i·ldx .. +k) (k a multiple of 256) as ops.h specifies: d = max|x| / 127 per 256
// values, q = x / d to nearest even (0 where d = 0). Both builds round bit for bit alike.
void quantize_blocks_portable(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                              float *scale, int16_t *sum);
void quantize_blocks_avx2(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                          float *scale, int16_t *sum);

// Outputs [row_begin, row_end) of every row of y from the quantized x.
void gemv_q8k_portable(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                       int64_t row_end);
void gemv_q8k_avx2(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                   int64_t row_end);
// The AVX-512 build (BW, VL, VNNI: CpuFeatures::avx512_vnni), which also rounds with
// quantize_blocks_avx2.
void gemv_q8k_avx512(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                     int64_t row_end);

}  // namespace pagoda::cpu
