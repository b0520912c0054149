#include "cpu_backend.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace pagoda::cpu {

namespace {

#if defined(__x86_64__)
// AVX2, FMA and F16C from cpuid, plus the OS saving the YMM registers (XCR0 bits 1 and 2).
bool has_avx2_fma_f16c() {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), avx = ecx & (1u << 28),
               f16c = ecx & (1u << 29);
    if (!(fma && osxsave && avx && f16c)) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6u) != 6u) return false;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return ebx & (1u << 5);
}
#endif

thread_local std::string t_last_failure;

CpuFeatures detect_features() {
    CpuFeatures f;
#if defined(__x86_64__)
    f.avx2_fma_f16c = has_avx2_fma_f16c();
#endif
    return f;
}

}  // namespace

CpuBackend::CpuBackend(const pagoda_backend_host_t &host, int threads, bool portable_only)
    : host_(host), features_(portable_only ? CpuFeatures{} : detect_features()), pool_(threads) {}

pagoda_status_t CpuBackend::fail(pagoda_status_t status, const std::string &message) const {
    t_last_failure = message;
    if (host_.set_error) host_.set_error(host_.ctx, ("cpu backend: " + message).c_str());
    return status;
}

const std::string &CpuBackend::last_failure() noexcept { return t_last_failure; }

void CpuBackend::log(pagoda_log_level_t level, const std::string &message) const {
    if (host_.log) host_.log(host_.ctx, level, ("cpu backend: " + message).c_str());
}

}  // namespace pagoda::cpu
