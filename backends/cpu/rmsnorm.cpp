// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_rmsnorm(CpuBackend &cpu, const pagoda_op_rmsnorm_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "rmsnorm: not implemented yet");
}

pagoda_status_t run_rmsnorm(CpuBackend &cpu, const pagoda_op_rmsnorm_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "rmsnorm: not implemented yet");
}

}  // namespace pagoda::cpu
