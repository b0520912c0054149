// The CPU kernels, one per op. A descriptor first passes the check every backend shares
// (op_checks.hpp: types, shapes, layout; its pointers may be NULL); `run_*` then executes it,
// checking the pointers and data-dependent indices itself. Failures go through `cpu.fail`.
#pragma once

#include "cpu_backend.hpp"
#include "pagoda/ops.h"
#include "reporter.hpp"

namespace pagoda::cpu {

pagoda_status_t run_matmul(CpuBackend &cpu, const pagoda_op_matmul_t &a);      // matmul.cpp
// MATMUL's kernel variants (ops.h's `variant`): the shared check, then whether the asked-for
// variant can run the descriptor; and the variants' names (NULL outside 1..count).
pagoda_status_t check_cpu_matmul(const plugin::Reporter &r, const pagoda_op_matmul_t &a);
const char *matmul_variant_name(int32_t variant);
pagoda_status_t run_embedding(CpuBackend &cpu, const pagoda_op_embedding_t &a);  // embedding.cpp
pagoda_status_t run_rmsnorm(CpuBackend &cpu, const pagoda_op_rmsnorm_t &a);    // rmsnorm.cpp
pagoda_status_t run_rope(CpuBackend &cpu, const pagoda_op_rope_t &a);          // rope.cpp
pagoda_status_t run_silu_mul(CpuBackend &cpu, const pagoda_op_silu_mul_t &a);  // elementwise.cpp
pagoda_status_t run_add(CpuBackend &cpu, const pagoda_op_add_t &a);            // elementwise.cpp
pagoda_status_t run_argmax(CpuBackend &cpu, const pagoda_op_argmax_t &a);      // rowwise.cpp
pagoda_status_t run_softmax(CpuBackend &cpu, const pagoda_op_softmax_t &a);    // rowwise.cpp
pagoda_status_t run_softcap(CpuBackend &cpu, const pagoda_op_softcap_t &a);    // softcap.cpp
pagoda_status_t run_sample(CpuBackend &cpu, const pagoda_op_sample_t &a);      // sample.cpp
// moe_route.cpp and moe_matmul.cpp (ABI 1.8)
pagoda_status_t run_moe_route(CpuBackend &cpu, const pagoda_op_moe_route_t &a);
pagoda_status_t run_moe_matmul(CpuBackend &cpu, const pagoda_op_moe_matmul_t &a);
pagoda_status_t run_kv_write(CpuBackend &cpu, const pagoda_op_kv_write_t &a);  // kv_write.cpp
// paged_attention.cpp
pagoda_status_t run_paged_attention(CpuBackend &cpu, const pagoda_op_paged_attention_t &a);
// attention_merge.cpp
pagoda_status_t run_attention_merge(CpuBackend &cpu, const pagoda_op_attention_merge_t &a);
// copy_blocks.cpp. On the CPU device memory is host memory, so a swap is the same copy; the two
// differ only in the op their messages name.
pagoda_status_t run_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a);
pagoda_status_t run_swap_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a);

// Checks (and with `launch`, runs) any op; kernel_dispatch.cpp.
pagoda_status_t dispatch_op(CpuBackend &cpu, pagoda_op_t op, const void *args, bool launch);

}  // namespace pagoda::cpu
