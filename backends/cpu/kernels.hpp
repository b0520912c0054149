// The CPU kernels, one pair per op: `check_*` validates a descriptor (types, shapes, layout; its
// pointers may be NULL) and `run_*` executes one whose check passed (it validates the pointers
// and data-dependent indices itself). Both report failures through `cpu.fail`.
#pragma once

#include "cpu_backend.hpp"
#include "pagoda/ops.h"

namespace pagoda::cpu {

#define PAGODA_CPU_KERNEL(op)                                                  \
    pagoda_status_t check_##op(CpuBackend &cpu, const pagoda_op_##op##_t &a); \
    pagoda_status_t run_##op(CpuBackend &cpu, const pagoda_op_##op##_t &a);

PAGODA_CPU_KERNEL(matmul)           // matmul.cpp (+ gemv_avx2.cpp, OpenBLAS)
PAGODA_CPU_KERNEL(embedding)        // embedding.cpp
PAGODA_CPU_KERNEL(rmsnorm)          // rmsnorm.cpp
PAGODA_CPU_KERNEL(rope)             // rope.cpp
PAGODA_CPU_KERNEL(silu_mul)         // elementwise.cpp
PAGODA_CPU_KERNEL(add)              // elementwise.cpp
PAGODA_CPU_KERNEL(argmax)           // rowwise.cpp
PAGODA_CPU_KERNEL(softmax)          // rowwise.cpp
PAGODA_CPU_KERNEL(kv_write)         // kv_write.cpp
PAGODA_CPU_KERNEL(paged_attention)  // paged_attention.cpp
PAGODA_CPU_KERNEL(copy_blocks)      // copy_blocks.cpp; runs COPY_BLOCKS and SWAP_BLOCKS
// SWAP_BLOCKS checks its direction too, then runs as run_copy_blocks.
pagoda_status_t check_swap_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a);

#undef PAGODA_CPU_KERNEL

// Checks (and with `launch`, runs) any op; kernel_dispatch.cpp.
pagoda_status_t dispatch_op(CpuBackend &cpu, pagoda_op_t op, const void *args, bool launch);

}  // namespace pagoda::cpu
