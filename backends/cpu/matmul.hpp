// MATMUL's f32 product (matmul.cpp) for kernels built on it (MOE_MATMUL, moe_matmul.cpp): f32 x
// and y, W of any weight type (block types decoded exactly), by MATMUL's own rules: the GEMV for
// decode-sized m, sgemm on f32 panels of W past it.
#pragma once

#include "cpu_backend.hpp"
#include "gemv.hpp"

namespace pagoda::cpu {

// `p` with quantize_x off (this route computes exactly). Runs on the calling thread's pool.
pagoda_status_t run_f32_product(CpuBackend &cpu, const GemvProblem &p);

}  // namespace pagoda::cpu
