// The CUDA backend's entry point and interface table. The entry fails cleanly (no crash, a
// message naming the CUDA error) when there is no driver or no device, so discovery skips it.
#include <dlfcn.h>
#include <nccl.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "cuda_backend.hpp"
#include "cuda_iface.hpp"
#include "plugin_config.hpp"

namespace pagoda::cuda {

namespace {

pagoda_status_t device_count(void *self, int32_t *count) {
    CudaBackend &cuda = self_of(self);
    if (count == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "device_count: count is NULL");
    *count = cuda.device_count();
    return PAGODA_OK;
}

pagoda_status_t device_info(void *self, int32_t device, pagoda_device_info_t *info) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        if (info == nullptr || info->struct_size < sizeof(pagoda_device_info_t))
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "device_info: info is NULL or too small");
        cudaDeviceProp prop{};
        if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaGetDeviceProperties", device);
        // cudaMemGetInfo reports on the current device (creating its context if need be).
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaMemGetInfo", device);
        pagoda_device_info_t out{};
        out.struct_size = sizeof out;
        out.kind = PAGODA_DEVICE_GPU;
        out.flags = 0;  // device memory is not host-accessible; weights must be copied in
        out.compute_units = prop.multiProcessorCount;
        out.total_memory = total_bytes;
        out.free_memory = free_bytes;
        std::snprintf(out.name, sizeof out.name, "%.*s", int(sizeof out.name - 1), prop.name);
        std::snprintf(out.arch, sizeof out.arch, "sm_%d%d", prop.major, prop.minor);
        *info = out;
        return PAGODA_OK;
    });
}

void destroy(void *self) { delete static_cast<Instance *>(self); }

void report(const pagoda_backend_host_t *host, const std::string &message) {
    if (host != nullptr && host->set_error != nullptr)
        host->set_error(host->ctx, ("cuda backend: " + message).c_str());
}

// "x.y" from CUDA's 1000·major + 10·minor encoding.
// Whether the NVIDIA driver's user-space library is installed (the runtime reports a missing
// driver and an old one alike, as cudaErrorInsufficientDriver).
bool driver_installed() {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h == nullptr) return false;
    dlclose(h);
    return true;
}

std::string cuda_version_text(int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string describe() {
    int runtime = 0, driver = 0, nccl = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaDriverGetVersion(&driver);
    (void)ncclGetVersion(&nccl);
    // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
    return "CUDA backend: CUDA runtime " + cuda_version_text(runtime) + ", driver " +
           cuda_version_text(driver) + ", cuBLAS, NCCL " + std::to_string(nccl / 10000) + "." +
           std::to_string(nccl % 10000 / 100) + "." + std::to_string(nccl % 100);
}

// The configuration keys (plugin.h's entry: unknown keys are an error naming the key):
//   tf32=0|1               f32 GEMMs may use TF32 tensor cores (default 0: ops.h's f32 compute)
//   nccl_timeout_ms=N      how long NCCL calls wait for the other ranks (default 600000)
// Returns false with `error` naming the key and the bad value.
bool parse_options(const std::map<std::string, std::string> &pairs, CudaOptions &out,
                   std::string &error) {
    constexpr int64_t kMaxTimeoutMs = int64_t(24) * 3600 * 1000;  // a day: past that, a typo
    for (const auto &[key, value] : pairs) {
        if (key == "tf32") {
            if (value != "0" && value != "1") {
                error = "config tf32 = '" + value + "' must be 0 or 1";
                return false;
            }
            out.tf32 = value == "1";
        } else if (key == "nccl_timeout_ms") {
            int64_t ms = 0;
            const char *end = value.data() + value.size();
            auto [ptr, ec] = std::from_chars(value.data(), end, ms);
            if (value.empty() || ec != std::errc() || ptr != end || ms < 1 || ms > kMaxTimeoutMs) {
                error = "config nccl_timeout_ms = '" + value +
                        "' must be a whole number of milliseconds from 1 to " +
                        std::to_string(kMaxTimeoutMs);
                return false;
            }
            out.nccl_timeout_ms = ms;
        } else {
            error = "unknown config key '" + key +
                    "' (the CUDA backend takes tf32 and nccl_timeout_ms)";
            return false;
        }
    }
    return true;
}

}  // namespace

}  // namespace pagoda::cuda

extern "C" __attribute__((visibility("default"))) pagoda_status_t pagoda_backend_entry(
    const pagoda_backend_host_t *host, const char *config, const pagoda_backend_iface_t **out) {
    using namespace pagoda::cuda;
    if (host == nullptr || out == nullptr) return PAGODA_ERR_INVALID_ARGUMENT;
    if (host->struct_size < sizeof(pagoda_backend_host_t) ||
        PAGODA_BACKEND_ABI_MAJOR(host->abi_version) !=
            PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)) {
        report(host, "host speaks plugin ABI " +
                         std::to_string(PAGODA_BACKEND_ABI_MAJOR(host->abi_version)) +
                         ", this plugin speaks " +
                         std::to_string(PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)));
        return PAGODA_ERR_ABI_MISMATCH;
    }
    try {
        std::string error;
        auto pairs = pagoda::plugin::parse_config(config, error);
        if (!pairs) {
            report(host, error);
            return PAGODA_ERR_INVALID_ARGUMENT;
        }
        CudaOptions options;
        if (!parse_options(*pairs, options, error)) {
            report(host, error);
            return PAGODA_ERR_INVALID_ARGUMENT;
        }
        // With no driver (cudaErrorInsufficientDriver) or no GPU (cudaErrorNoDevice) this is
        // where we stop: the host skips this backend and says why.
        int count = 0;
        if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
            (void)cudaGetLastError();
            int runtime = 0;
            (void)cudaRuntimeGetVersion(&runtime);
            // The runtime says "insufficient driver" also when there is no driver at all.
            std::string hint = e == cudaErrorInsufficientDriver
                                   ? " (is an NVIDIA driver for CUDA " +
                                         cuda_version_text(runtime) + " or later installed?)"
                                   : "";
            report(host, std::string("no CUDA device: cudaGetDeviceCount: ") +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + hint);
            // No GPU, or no driver at all, is how most machines are (NOT_FOUND: the host logs it
            // as information); a driver that is there but too old or broken is a fault to show.
            const bool absent = e == cudaErrorNoDevice || (e == cudaErrorInsufficientDriver && !driver_installed());
            return absent ? PAGODA_ERR_NOT_FOUND : PAGODA_ERR_BACKEND;
        }
        if (count < 1) {
            report(host, "no CUDA device: cudaGetDeviceCount found none");
            return PAGODA_ERR_NOT_FOUND;
        }
        auto instance = std::make_unique<Instance>(*host, count, describe(), options);
        pagoda_backend_iface_t &t = instance->iface;
        t.struct_size = sizeof t;
        t.abi_version = PAGODA_BACKEND_ABI_VERSION;
        t.name = "cuda";
        t.description = instance->backend.description().c_str();
        t.self = instance.get();
        t.destroy = destroy;
        t.device_count = device_count;
        t.device_info = device_info;
        t.buffer_alloc = buffer_alloc;
        t.buffer_free = buffer_free;
        t.host_buffer_alloc = host_buffer_alloc;
        t.host_buffer_free = host_buffer_free;
        t.stream_create = stream_create;
        t.stream_destroy = stream_destroy;
        t.stream_synchronize = stream_synchronize;
        t.event_create = event_create;
        t.event_destroy = event_destroy;
        t.event_record = event_record;
        t.stream_wait_event = stream_wait_event;
        t.event_synchronize = event_synchronize;
        t.copy = copy;
        t.memset = memset_async;
        t.kernels = &kGraphAwareKernels;  // kKernels, noting refusals during a capture
        t.collectives = &kCollectives;
        t.stream_query = stream_query;
        t.event_query = event_query;
        t.event_elapsed = event_elapsed;
        t.graph_capture_begin = graph_capture_begin;
        t.graph_capture_end = graph_capture_end;
        t.graph_launch = graph_launch;
        t.graph_destroy = graph_destroy;
        *out = &instance.release()->iface;
        return PAGODA_OK;
    } catch (const std::bad_alloc &) {
        report(host, "out of memory while starting");
        return PAGODA_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        report(host, std::string("failed to start: ") + e.what());
        return PAGODA_ERR_BACKEND;
    }
}
