// Widening bf16/f16 weights to f32, a panel of W rows at a time, so that an f32 GEMM can use
// them with f32 activations without rounding the activations down; widen_kernel.cu. Plain C++ so
// both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cuda {

// dst[r * cols + c] = float(src[r * ld_src + c]) for r < rows, c < cols: `src` holds `dtype`
// (BF16 or F16) elements with row stride `ld_src`, `dst` is packed. Queued on `stream`; returns
// the launch's error (cudaErrorInvalidValue for another dtype; cudaSuccess for an empty panel).
cudaError_t widen_to_f32(const void *src, pagoda_dtype_t dtype, int64_t ld_src, int64_t rows,
                         int64_t cols, float *dst, cudaStream_t stream);

}  // namespace pagoda::cuda
