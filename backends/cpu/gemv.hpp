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
    const void *w;  // f32, bf16 or f16 as w_dtype says
    pagoda_dtype_t w_dtype;
    int64_t ldw;
    const float *bias;  // or nullptr
    float *y;
    int64_t ldy;
    bool accumulate;
};

// W rows handled together by the vector kernel; callers split work on multiples of it so that
// each chunk keeps whole tiles.
inline constexpr int64_t kGemvTileRows = 4;

// Computes outputs [row_begin, row_end) of every row of y (all m rows of x per pass over W).
void gemv_avx2(const GemvProblem &p, int64_t row_begin, int64_t row_end);
void gemv_portable(const GemvProblem &p, int64_t row_begin, int64_t row_end);

}  // namespace pagoda::cpu
