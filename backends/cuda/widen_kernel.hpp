// Widening bf16/f16 weights or activations, or quantized block weights, to f32, a panel of rows at a time, so that an f32
// GEMM can use them with f32 activations without rounding the activations down, and narrowing
// an f32 result to a bf16/f16 output with one rounding; widen_kernel.cu. Plain C++ so
// both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cuda {

// dst[r * cols + c] = float(src[r * ld_src + c]) for r < rows, c < cols: `src` holds `dtype`
// (BF16, F16 or a block type, decoded exactly as block_formats.cpp does) with row stride
// `ld_src` values, `dst` is packed. Block types need cols and ld_src whole blocks, `src` aligned
// as block_decode.cuh's block_alignment says and `dst` 16-byte aligned. Queued on `stream`;
// returns the launch's error (cudaErrorInvalidValue for another dtype or those needs unmet;
// cudaSuccess for an empty panel).
cudaError_t widen_to_f32(const void *src, pagoda_dtype_t dtype, int64_t ld_src, int64_t rows,
                         int64_t cols, float *dst, cudaStream_t stream);

// dst[r * cols + c] = the decoded value of src[r, c] rounded to nearest even to `dst_dtype`
// (BF16 or F16), for the block type `dtype`, with the same needs as widen_to_f32's block types
// (`dst` packed, 16-byte aligned). Queued on `stream`; returns the launch's error
// (cudaErrorInvalidValue for other types or those needs unmet).
cudaError_t round_blocks_to_half(const void *src, pagoda_dtype_t dtype, int64_t ld_src,
                                 int64_t rows, int64_t cols, void *dst, pagoda_dtype_t dst_dtype,
                                 cudaStream_t stream);

// dst[r * ld_dst + c] = src[r * cols + c] rounded to nearest even to `dtype` (BF16 or F16) for
// r < rows, c < cols: `src` is packed f32. Queued on `stream`; returns the launch's error
// (cudaErrorInvalidValue for another dtype; cudaSuccess when there is nothing to do).
cudaError_t narrow_from_f32(const float *src, int64_t rows, int64_t cols, void *dst,
                            pagoda_dtype_t dtype, int64_t ld_dst, cudaStream_t stream);

}  // namespace pagoda::cuda
