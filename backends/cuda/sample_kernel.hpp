// SAMPLE: one token per row of logits, greedy or drawn after temperature, top-k, top-p and
// min-p (ops.h), one thread block per row; sample_kernel.cu. Plain C++ so both nvcc and the
// host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// One launch's rows; every array is device memory and has been checked non-NULL.
struct SampleRows {
    int64_t rows;
    int64_t cols;
    const void *logits;
    pagoda_dtype_t logits_dtype;  // F32, BF16 or F16 (ops.h's 0 already turned into F32)
    int64_t ldx;                  // the effective stride (ops.h's 0 already turned into cols)
    const float *temperature;
    const int32_t *top_k;
    const float *top_p;
    const float *min_p;
    const float *uniform;
    int32_t *out;
    float *logprobs;  // or nullptr
};

// Queues the launch on `stream`. A row whose parameters or logits ops.h rejects is recorded in
// `error` (DeviceErrorField::SampleRow) and its out[r] left as it was; nothing runs when `error`
// holds an earlier launch's error. Returns the launch's error.
cudaError_t launch_sample(const SampleRows &rows, DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
