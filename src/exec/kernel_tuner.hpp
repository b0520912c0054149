// Measuring a backend's kernel variants of one product (Collage's measure-then-choose; the table
// of choices is runtime/kernel_choices.hpp). The product runs as the forward pass launches it,
// on the real weights, with scratch activations of the bucket's row count, and every candidate
// is timed in alternating rounds so that a noisy moment costs each of them alike.
#pragma once

#include <string>
#include <vector>

#include "pagoda/ops.h"
#include "runtime/device.hpp"
#include "runtime/kernel_choices.hpp"

namespace pagoda::exec {

// Times the backend's rules (variant 0) and each of `variants` that supports() takes for `a`
// (its W and bias are read; x, y and the strides are replaced by scratch of a.m rows), and
// returns the fastest variant, or KernelChoices::kRules when none beats the rules by more than
// the measurement's noise margin. Synchronizes `stream` first; throws as launches do.
runtime::KernelChoice measure_matmul(const runtime::Stream &stream, pagoda_op_matmul_t a,
                                     const std::vector<std::string> &variants);

}  // namespace pagoda::exec
