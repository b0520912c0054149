// SILU_MUL, ADD and SOFTCAP over f32, bf16 or f16 activations; elementwise_kernel.cu. Plain C++
// so both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// out[r, i] = act(gate[r, i]) · up[r, i] for r < rows, i < dim, with act SiLU or GELU's tanh
// form as `activation` (a checked pagoda_glu_activation_t) says; `gate`, `up` and `out` are of
// `act` (F32, BF16 or F16), computed in f32 and rounded once; `gate` and `up` rows `ld_in`
// apart, `out` rows `ldo` apart; `out` may alias `gate` or `up`. Queued on `stream`; does
// nothing when `error` holds an earlier launch's error. Returns the launch's error
// (cudaErrorInvalidValue for another `act`).
cudaError_t launch_silu_mul(pagoda_dtype_t act, int32_t activation, const void *gate,
                            const void *up, int64_t ld_in, void *out, int64_t ldo, int64_t rows,
                            int64_t dim, const DeviceError *error, cudaStream_t stream);

// out[i] = a[i] + b[i] for i < n, all of `act`; `out` may alias either. Same queueing and return.
cudaError_t launch_add(pagoda_dtype_t act, const void *a, const void *b, void *out, int64_t n,
                       const DeviceError *error, cudaStream_t stream);

// x[i] = cap · tanh(x[i] / cap) in place for i < n, x of `dtype` (F32, BF16 or F16), computed in
// f32 and rounded once; `cap` positive and finite. Same queueing and return.
cudaError_t launch_softcap(pagoda_dtype_t dtype, void *x, int64_t n, float cap,
                           const DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
