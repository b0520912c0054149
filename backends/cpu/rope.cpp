// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_rope(CpuBackend &cpu, const pagoda_op_rope_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "rope: not implemented yet");
}

pagoda_status_t run_rope(CpuBackend &cpu, const pagoda_op_rope_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "rope: not implemented yet");
}

}  // namespace pagoda::cpu
