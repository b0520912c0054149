// The bias add after a cuBLAS product that could not fuse it (no cuBLASLt algorithm with the
// bias epilogue for that shape or alignment); bias_kernel.cu. Plain C++ so both nvcc and the
// host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cuda {

// y[i, j] += bias[j] for i < m, j < n, rows `ldy` apart, with y of `dtype` (F32, BF16 or F16;
// the sum is formed in f32 and rounded to y's type) and the bias f32 (ops.h). The matmul only
// adds it to f32 outputs: on a bf16/f16 y it would round the product twice. Queued on `stream`.
// Returns the launch's error (cudaErrorInvalidValue for another dtype; cudaSuccess when m or n
// is 0).
cudaError_t add_bias(void *y, pagoda_dtype_t dtype, int64_t ldy, const float *bias, int64_t m,
                     int64_t n, cudaStream_t stream);

}  // namespace pagoda::cuda
