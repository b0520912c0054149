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

// AVX-512 F (leaf 7 EBX bit 16), BW (30), VL (31) and VNNI (ECX bit 11), with the OS saving
// the opmask and ZMM registers (XCR0 bits 5-7) besides the YMM ones.
bool has_avx512_vnni() {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6u) != 0xE6u) return false;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const unsigned needed_ebx = (1u << 16) | (1u << 30) | (1u << 31);
    return (ebx & needed_ebx) == needed_ebx && (ecx & (1u << 11));
}
#endif

thread_local std::string t_last_failure;

// The calling thread's current device (DeviceScope). The backend is kept too, so a thread that
// drives two loaded instances never takes one's device index for the other's.
struct CurrentDevice {
    const CpuBackend *backend = nullptr;
    int32_t device = 0;
};
thread_local CurrentDevice t_current;

CpuFeatures detect_features(bool avx2_only) {
    CpuFeatures f;
#if defined(__x86_64__)
    f.avx2_fma_f16c = has_avx2_fma_f16c();
    f.avx512_vnni = f.avx2_fma_f16c && !avx2_only && has_avx512_vnni();
#else
    (void)avx2_only;
#endif
    return f;
}

}  // namespace

CpuBackend::CpuBackend(const pagoda_backend_host_t &host, const CpuConfig &config)
    : host_(host),
      features_(config.portable_only ? CpuFeatures{} : detect_features(config.avx2_only)),
      mapped_weights_(config.mapped_weights),
      fault_(config.fail_collective),
      network_(config.network_interface) {
    for (size_t d = 0; d < config.device_threads.size(); ++d) {
        // A worker runs chunks of its own device's kernels only: nested calls must see it.
        auto mark_worker = [this, d] { t_current = {this, int32_t(d)}; };
        devices_.push_back(std::make_unique<CpuDevice>(config.device_threads[d],
                                                       config.memory_per_device, mark_worker));
    }
}

std::string CpuBackend::mesh_name() const {
    if (devices_.size() == 1) return "cpu:0";
    return "cpu:0-" + std::to_string(devices_.size() - 1);
}

pagoda_status_t CpuBackend::check_device(int32_t index) const {
    if (index >= 0 && index < device_count()) return PAGODA_OK;
    return fail(PAGODA_ERR_NOT_FOUND,
                "device " + std::to_string(index) + " does not exist (" + mesh_name() + ")");
}

int32_t CpuBackend::current_device() const noexcept {
    return t_current.backend == this ? t_current.device : 0;
}

bool CpuBackend::collective_fault_due(int32_t device) {
    const uint64_t call = devices_[size_t(device)]->collective_calls.fetch_add(1) + 1;
    return fault_ && fault_->device == device && fault_->call == call;
}

DeviceScope::DeviceScope(const CpuBackend &cpu, int32_t device) noexcept
    : outer_backend_(t_current.backend), outer_device_(t_current.device) {
    t_current = {&cpu, device};
}

DeviceScope::~DeviceScope() { t_current = {outer_backend_, outer_device_}; }

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
