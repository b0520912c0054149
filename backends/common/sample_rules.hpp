// SAMPLE's per-row rules (ops.h) that only a launch can check, since the values live in device
// memory: shared so that the CPU backend (on the host) and the CUDA backend (in its kernel)
// reject the same rows and word the failure the same way. Plain C++ that nvcc also reads.
#pragma once

#include <cstdint>
#include <string>

#include "pagoda/ops.h"
#include "reporter.hpp"

#ifdef __CUDACC__
#define PAGODA_SAMPLE_HOST_DEVICE __host__ __device__
#else
#define PAGODA_SAMPLE_HOST_DEVICE
#endif

namespace pagoda::plugin {

// What is wrong with a row, in the order the fields are checked.
enum class SampleFault : int32_t {
    None = 0,
    Temperature,  // negative, NaN or infinite
    TopP,         // outside (0, 1]
    MinP,         // outside [0, 1]
    Uniform,      // outside [0, 1)
    NanLogit,     // a NaN in the row
    AllNegInf,    // every logit is -inf: nothing can be drawn
};

// The first out-of-range parameter of a row, or None. Comparisons only (each written so that
// NaN fails it), so that device code can call it too; 3.402823466e38f is FLT_MAX, so the
// temperature test also rejects +inf.
PAGODA_SAMPLE_HOST_DEVICE inline SampleFault sample_param_fault(float temperature, float top_p,
                                                               float min_p, float uniform) {
    if (!(temperature >= 0.0f && temperature <= 3.402823466e38f)) return SampleFault::Temperature;
    if (!(top_p > 0.0f && top_p <= 1.0f)) return SampleFault::TopP;
    if (!(min_p >= 0.0f && min_p <= 1.0f)) return SampleFault::MinP;
    if (!(uniform >= 0.0f && uniform < 1.0f)) return SampleFault::Uniform;
    return SampleFault::None;
}

// What is wrong, after the "sample: " that each backend's messages begin with: "top_p[3] = 1.5
// must be in (0, 1]" or "logits row 3 has a NaN at column 17". `value` is the parameter's value
// (the four parameter faults), `column` the NaN's column.
std::string sample_fault_text(SampleFault fault, int64_t row, float value, int64_t column);

// At launch: every pointer of a checked descriptor is non-NULL.
pagoda_status_t check_sample_pointers(const Reporter &r, const pagoda_op_sample_t &a);

}  // namespace pagoda::plugin
