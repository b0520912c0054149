// Plain cuBLAS on the CUDA backend's device, called directly (not through the plugin): the
// arithmetic ceiling that prefill attention is judged against, and the baseline for the
// backend's matmul. Built only with PAGODA_WITH_CUDA (PAGODA_BENCH_WITH_CUBLAS).
#pragma once

#include <cstdint>

#include "bench_common.hpp"

namespace pagoda::bench {

// Best seconds per call of the plain cuBLAS GEMM equivalent to the backend's MATMUL of
// y[m,n] = x[m,k] · W[n,k]ᵀ with weights of `w_dtype`: for f32 weights the same f32 GEMM, for
// half weights the half × half GEMM with f32 output (x already in the weights' type, which
// the op itself does not get), both accumulating in f32. Timed with CUDA events on a stream of
// its own, with the bench's repeat and duration settings. Device memory comes from the bench
// (the plugin's buffer_alloc: the same CUDA runtime and device).
double cublas_matmul_seconds(Bench &bench, int64_t m, int64_t n, int64_t k, pagoda_dtype_t w_dtype);

}  // namespace pagoda::bench
