// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "copy_blocks: not implemented yet");
}

pagoda_status_t run_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "copy_blocks: not implemented yet");
}

}  // namespace pagoda::cpu
