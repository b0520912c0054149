// The CUDA kernels, one pair per op as in the CPU backend: `check_*` validates a descriptor
// (types, shapes, layout; its pointers may be NULL) and `run_*` queues one whose check passed on
// a stream. Ops without a pair here are reported unsupported by cuda_kernels.cpp.
#pragma once

#include "cuda_backend.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

// cuda_matmul.cpp: cuBLAS, f32 weights; bias_kernel.cu adds the bias.
pagoda_status_t check_matmul(CudaBackend &cuda, const pagoda_op_matmul_t &a);
pagoda_status_t run_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_matmul_t &a);

}  // namespace pagoda::cuda
