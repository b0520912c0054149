// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_paged_attention(CpuBackend &cpu, const pagoda_op_paged_attention_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "paged_attention: not implemented yet");
}

pagoda_status_t run_paged_attention(CpuBackend &cpu, const pagoda_op_paged_attention_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "paged_attention: not implemented yet");
}

}  // namespace pagoda::cpu
