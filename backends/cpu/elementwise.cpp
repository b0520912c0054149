// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_silu_mul(CpuBackend &cpu, const pagoda_op_silu_mul_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "silu_mul: not implemented yet");
}

pagoda_status_t run_silu_mul(CpuBackend &cpu, const pagoda_op_silu_mul_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "silu_mul: not implemented yet");
}

pagoda_status_t check_add(CpuBackend &cpu, const pagoda_op_add_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "add: not implemented yet");
}

pagoda_status_t run_add(CpuBackend &cpu, const pagoda_op_add_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "add: not implemented yet");
}

}  // namespace pagoda::cpu
