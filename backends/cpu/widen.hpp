// Widening a run of weights or activations (f32, bf16, f16 or a quantized block type) to f32,
// for kernels that hand f32 to OpenBLAS or compute in f32 (matmul's panels, the GEMV's block
// rows and half activations, embedding), and narrowing f32 results back to an activation type.
#pragma once

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

struct CpuFeatures;  // cpu_backend.hpp; not included so AVX2 files see no shared inline code

// dst[i] = src[i] as f32 for i < n; src is of `dtype` (F32, BF16, F16, or a block type with n a
// multiple of its block: decoded exactly as the reference decoders do). Uses AVX2/F16C when
// `features` has them.
void widen_to_f32(const CpuFeatures &features, const void *src, pagoda_dtype_t dtype, int64_t n,
                  float *dst);

// The AVX2/F16C build (widen_avx2.cpp); call only when features().avx2_fma_f16c.
void widen_to_f32_avx2(const void *src, pagoda_dtype_t dtype, int64_t n, float *dst);

// Decodes `blocks` whole blocks of a quantized type (block_decode_avx2.cpp), bit for bit as
// formats::decode_blocks does; call only when features().avx2_fma_f16c.
void decode_blocks_avx2(pagoda_dtype_t dtype, const void *src, int64_t blocks, float *dst);

// dst[i] = src[i] rounded to `dtype` (F32, BF16 or F16; round to nearest even, as half.hpp)
// for i < n. Uses AVX2/F16C when `features` has them.
void narrow_from_f32(const CpuFeatures &features, const float *src, pagoda_dtype_t dtype,
                     int64_t n, void *dst);

// The AVX2/F16C build (widen_avx2.cpp); call only when features().avx2_fma_f16c.
void narrow_from_f32_avx2(const float *src, pagoda_dtype_t dtype, int64_t n, void *dst);

}  // namespace pagoda::cpu
