// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_kv_write(CpuBackend &cpu, const pagoda_op_kv_write_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "kv_write: not implemented yet");
}

pagoda_status_t run_kv_write(CpuBackend &cpu, const pagoda_op_kv_write_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "kv_write: not implemented yet");
}

}  // namespace pagoda::cpu
