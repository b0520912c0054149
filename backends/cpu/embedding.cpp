// PLACEHOLDER: replaced by the real kernels before commit.
#include "kernels.hpp"

namespace pagoda::cpu {

pagoda_status_t check_embedding(CpuBackend &cpu, const pagoda_op_embedding_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "embedding: not implemented yet");
}

pagoda_status_t run_embedding(CpuBackend &cpu, const pagoda_op_embedding_t &) {
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, "embedding: not implemented yet");
}

}  // namespace pagoda::cpu
