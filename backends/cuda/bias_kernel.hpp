// The bias add that follows a cuBLAS product; bias_kernel.cu. Plain C++ so both nvcc and the
// host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pagoda::cuda {

// y[i, j] += bias[j] for i < m, j < n, rows `ldy` apart; queued on `stream`. Returns the
// launch's error (cudaSuccess when m or n is 0).
cudaError_t add_bias(float *y, int64_t ldy, const float *bias, int64_t m, int64_t n,
                     cudaStream_t stream);

}  // namespace pagoda::cuda
