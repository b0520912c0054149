// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_argmax(CpuBackend &cpu, const pagoda_op_argmax_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "argmax: not implemented yet");
}

pagoda_status_t run_argmax(CpuBackend &cpu, const pagoda_op_argmax_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "argmax: not implemented yet");
}

pagoda_status_t check_softmax(CpuBackend &cpu, const pagoda_op_softmax_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "softmax: not implemented yet");
}

pagoda_status_t run_softmax(CpuBackend &cpu, const pagoda_op_softmax_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "softmax: not implemented yet");
}

}  // namespace pagoda::cpu
