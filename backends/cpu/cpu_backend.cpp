#include "cpu_backend.hpp"

namespace pagoda::cpu {

namespace {
CpuFeatures detect_features() {
    CpuFeatures f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2_fma_f16c = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c");
#endif
    return f;
}
}  // namespace

CpuBackend::CpuBackend(const pagoda_backend_host_t &host, int threads)
    : host_(host), features_(detect_features()), pool_(threads) {}

pagoda_status_t CpuBackend::fail(pagoda_status_t status, const std::string &message) const {
    if (host_.set_error) host_.set_error(host_.ctx, ("cpu backend: " + message).c_str());
    return status;
}

void CpuBackend::log(pagoda_log_level_t level, const std::string &message) const {
    if (host_.log) host_.log(host_.ctx, level, ("cpu backend: " + message).c_str());
}

}  // namespace pagoda::cpu
