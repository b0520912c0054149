// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_matmul(CpuBackend &cpu, const pagoda_op_matmul_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "matmul: not implemented yet");
}

pagoda_status_t run_matmul(CpuBackend &cpu, const pagoda_op_matmul_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "matmul: not implemented yet");
}

}  // namespace pagoda::cpu
