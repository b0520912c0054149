// RMSNorm, optionally fused with the residual add before it; rmsnorm_kernel.cu. Plain C++ so
// both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// One launch's rows: `x` and `out` of `act_dtype`, the residual f32, `weight` of `weight_dtype`
// (each type F32, BF16 or F16).
struct RmsNormRows {
    int64_t rows;
    int64_t dim;
    float eps;
    pagoda_dtype_t act_dtype;
    const void *x;
    int64_t ldx;
    float *residual;  // nullptr: plain RMSNorm of x
    int64_t ld_residual;
    const void *weight;
    pagoda_dtype_t weight_dtype;
    void *out;  // may alias x (or residual)
    int64_t ldo;
};

// With a residual: residual += x, then out = residual / sqrt(mean(residual²) + eps) · weight;
// without: the same of x. Computed in f32 from the widened x, each output rounded once. Queued on `stream`; does nothing when `error` holds an earlier
// launch's error. Returns the launch's error.
cudaError_t launch_rmsnorm(const RmsNormRows &rows, const DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
