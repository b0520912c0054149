// Widening a run of weights (f32, bf16 or f16) to f32, for kernels that hand f32 to OpenBLAS or
// copy table rows out (matmul's panels, embedding).
#pragma once

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

struct CpuFeatures;  // cpu_backend.hpp; not included so AVX2 files see no shared inline code

// dst[i] = src[i] as f32 for i < n; src is of `dtype` (F32, BF16 or F16). Uses AVX2/F16C when
// `features` has them.
void widen_to_f32(const CpuFeatures &features, const void *src, pagoda_dtype_t dtype, int64_t n,
                  float *dst);

// The AVX2/F16C build (widen_avx2.cpp); call only when features().avx2_fma_f16c.
void widen_to_f32_avx2(const void *src, pagoda_dtype_t dtype, int64_t n, float *dst);

}  // namespace pagoda::cpu
