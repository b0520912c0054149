// SILU_MUL and ADD over f32; elementwise_kernel.cu. Plain C++ so both nvcc and the host compiler
// read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"

namespace pagoda::cuda {

// out[r, i] = silu(gate[r, i]) · up[r, i] for r < rows, i < dim; `gate` and `up` rows `ld_in`
// apart, `out` rows `ldo` apart; `out` may alias `gate` or `up`. Queued on `stream`; does
// nothing when `error` holds an earlier launch's error. Returns the launch's error.
cudaError_t launch_silu_mul(const float *gate, const float *up, int64_t ld_in, float *out,
                            int64_t ldo, int64_t rows, int64_t dim, const DeviceError *error,
                            cudaStream_t stream);

// out[i] = a[i] + b[i] for i < n; `out` may alias either. Same queueing and return.
cudaError_t launch_add(const float *a, const float *b, float *out, int64_t n,
                       const DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
