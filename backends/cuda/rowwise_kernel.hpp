// ARGMAX and SOFTMAX over rows of f32, bf16 or f16 (computed in f32), one thread block per row;
// rowwise_kernel.cu. Plain C++ so
// both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// out[r] = the lowest index of row r's maximum (a NaN counts as larger than any number, so the
// first NaN wins, as in the CPU backend), for `rows` rows of `cols` values of `dtype` (F32, BF16
// or F16) `ldx` apart. Queued on `stream`; does nothing when `error` holds an earlier launch's
// error. Returns the launch's error (cudaErrorInvalidValue for another dtype).
cudaError_t launch_argmax(pagoda_dtype_t dtype, const void *x, int64_t ldx, int64_t rows,
                          int64_t cols, int32_t *out, const DeviceError *error,
                          cudaStream_t stream);

// out[r, :] = softmax(scale · x[r, :]), max-subtracted, x and out of `dtype`, each result
// rounded once; `out` may alias `x`. `scale` is the effective one (ops.h's 0 already turned
// into 1). Same queueing and return as launch_argmax.
cudaError_t launch_softmax(pagoda_dtype_t dtype, const void *x, int64_t ldx, void *out,
                           int64_t ldo, int64_t rows, int64_t cols, float scale,
                           const DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
