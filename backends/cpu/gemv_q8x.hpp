// The 8-bit-activation route of the small-m product on block-quantized W (ops.h's
// PAGODA_MATMUL_QUANTIZE_X): x is rounded to int8 per run of 32 values with an f32 scale, W's
// blocks are decoded to int8 runs with their f32 scales (and mins), and each 32 weights meet
// 32 activations in one integer multiply-add of bytes. The float route (gemv_blocks_avx2.cpp)
// spends 4-6 instructions converting each 8 weights to f32; here a run of 32 costs about ten.
//
// The CPU backend takes the leave for one or two x rows (kQ8xMaxM), where decoding binds.
// From three rows on, decoding a chunk once for every x row and multiplying in f32 (the
// float route) was faster: the int8 product costs more per x row than f32 FMAs on decoded
// values. Measured (pagoda-bench-kernels --bench gemv,gemv_q8x, 4096², 2 threads, ms):
// Q8_0 m = 1, 2, 3 took 0.81, 1.18, 1.46 here against 1.83 (m = 1) and 2.43 (m = 4) there.
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

// Up to this m the backend computes on int8 x when the flag allows it.
inline constexpr int64_t kQ8xMaxM = 2;

// Whether the route serves this W type (all five block types).
bool q8x_serves(pagoda_dtype_t w_dtype);

// Rounds rows x[i·ldx .. +k) (k a multiple of 32) as ops.h specifies: d = max|x| / 127 per run,
// q = x / d to nearest even (0 where d = 0). Both builds round bit for bit alike.
void quantize_rows_portable(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                            float *scale, float *sum);
void quantize_rows_avx2(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                        float *scale, float *sum);

// Outputs [row_begin, row_end) of every row of y from the quantized x.
void gemv_q8x_portable(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end);
void gemv_q8x_avx2(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end);

}  // namespace pagoda::cpu
