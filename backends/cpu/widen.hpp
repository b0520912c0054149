// Widening a run of weights or activations (f32, bf16 or f16) to f32, for kernels that hand f32
// to OpenBLAS or compute in f32 (matmul's panels and half activations, embedding), and
// narrowing f32 results back to an activation type.
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

// dst[i] = src[i] rounded to `dtype` (F32, BF16 or F16; round to nearest even, as half.hpp)
// for i < n. Uses AVX2/F16C when `features` has them.
void narrow_from_f32(const CpuFeatures &features, const float *src, pagoda_dtype_t dtype,
                     int64_t n, void *dst);

// The AVX2/F16C build (widen_avx2.cpp); call only when features().avx2_fma_f16c.
void narrow_from_f32_avx2(const float *src, pagoda_dtype_t dtype, int64_t n, void *dst);

}  // namespace pagoda::cpu
