// The CPU backend's kernel table: maps an op id to its argument struct, the descriptor check
// every backend shares (op_checks.hpp) and the CPU kernel.
#include <string>

#include "kernels.hpp"
#include "names.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"

namespace pagoda::cpu {

namespace {

template <typename T>
using CheckFn = pagoda_status_t (*)(const plugin::Reporter &, const T &);
template <typename T>
using RunFn = pagoda_status_t (*)(CpuBackend &, const T &);

// Reads `args` as T (see op_args.hpp), checks it, and runs it when `launch` is set.
template <typename T>
pagoda_status_t dispatch(CpuBackend &cpu, pagoda_op_t op, const void *args, bool launch,
                         CheckFn<T> check, RunFn<T> run) {
    T a;
    pagoda_status_t s = plugin::read_op_args(cpu, formats::op_name(op), args, a);
    if (s == PAGODA_OK) s = check(cpu, a);
    if (s != PAGODA_OK || !launch) return s;
    return run(cpu, a);
}

}  // namespace

pagoda_status_t dispatch_op(CpuBackend &cpu, pagoda_op_t op, const void *args, bool launch) {
    using namespace plugin;
    switch (op) {
        case PAGODA_OP_MATMUL:
            return dispatch<pagoda_op_matmul_t>(cpu, op, args, launch, check_cpu_matmul, run_matmul);
        case PAGODA_OP_EMBEDDING:
            return dispatch<pagoda_op_embedding_t>(cpu, op, args, launch, check_embedding,
                                                   run_embedding);
        case PAGODA_OP_RMSNORM:
            return dispatch<pagoda_op_rmsnorm_t>(cpu, op, args, launch, check_rmsnorm,
                                                 run_rmsnorm);
        case PAGODA_OP_ROPE:
            return dispatch<pagoda_op_rope_t>(cpu, op, args, launch, check_rope, run_rope);
        case PAGODA_OP_SILU_MUL:
            return dispatch<pagoda_op_silu_mul_t>(cpu, op, args, launch, check_silu_mul,
                                                  run_silu_mul);
        case PAGODA_OP_ADD:
            return dispatch<pagoda_op_add_t>(cpu, op, args, launch, check_add, run_add);
        case PAGODA_OP_ARGMAX:
            return dispatch<pagoda_op_argmax_t>(cpu, op, args, launch, check_argmax, run_argmax);
        case PAGODA_OP_SOFTMAX:
            return dispatch<pagoda_op_softmax_t>(cpu, op, args, launch, check_softmax,
                                                 run_softmax);
        case PAGODA_OP_KV_WRITE:
            return dispatch<pagoda_op_kv_write_t>(cpu, op, args, launch, check_kv_write,
                                                  run_kv_write);
        case PAGODA_OP_PAGED_ATTENTION:
            return dispatch<pagoda_op_paged_attention_t>(cpu, op, args, launch,
                                                         check_paged_attention,
                                                         run_paged_attention);
        case PAGODA_OP_COPY_BLOCKS:
            return dispatch<pagoda_op_copy_blocks_t>(cpu, op, args, launch, check_copy_blocks,
                                                     run_copy_blocks);
        case PAGODA_OP_SWAP_BLOCKS:
            return dispatch<pagoda_op_copy_blocks_t>(cpu, op, args, launch, check_swap_blocks,
                                                     run_swap_blocks);
        case PAGODA_OP_SAMPLE:
            return dispatch<pagoda_op_sample_t>(cpu, op, args, launch, check_sample, run_sample);
        case PAGODA_OP_ATTENTION_MERGE:
            return dispatch<pagoda_op_attention_merge_t>(cpu, op, args, launch,
                                                         check_attention_merge,
                                                         run_attention_merge);
        case PAGODA_OP_SOFTCAP:
            return dispatch<pagoda_op_softcap_t>(cpu, op, args, launch, check_softcap,
                                                 run_softcap);
        case PAGODA_OP_MOE_ROUTE:
            return dispatch<pagoda_op_moe_route_t>(cpu, op, args, launch, check_moe_route,
                                                   run_moe_route);
        case PAGODA_OP_MOE_MATMUL:
            return dispatch<pagoda_op_moe_matmul_t>(cpu, op, args, launch, check_moe_matmul,
                                                    run_moe_matmul);
        case PAGODA_OP_INVALID: break;
    }
    return cpu.fail(PAGODA_ERR_UNSUPPORTED,
                    "op " + std::to_string(int(op)) + " is unknown to the CPU backend");
}

}  // namespace pagoda::cpu
