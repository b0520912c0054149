// RoPE in place over [n_tokens, n_heads, head_dim] of f32, bf16 or f16; rope_kernel.cu. Plain C++ so both nvcc
// and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

// Applies the checked descriptor `a` (its x, positions and freq_factors in device memory) on
// `stream`. Angles are position · inv_freq in double, inv_freq built in double as the CPU
// backend's rope_rotation.cpp builds it (rope_math.cuh). A freq_factors entry that is not
// finite and positive is recorded in `error` (DeviceErrorField::RopeFreqFactor) before any
// element is written, and the launch then writes nothing; nothing runs when `error` holds an
// earlier launch's error. Returns the launch's error.
cudaError_t launch_rope(const pagoda_op_rope_t &a, DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
