#include "cuda_backend.hpp"

#include <cstdio>

namespace pagoda::cuda {

namespace {
thread_local std::string t_last_failure;  // CudaBackend::last_failure()
}  // namespace

CudaBackend::CudaBackend(const pagoda_backend_host_t &host, int32_t device_count,
                         std::string description, CudaOptions options)
    : host_(host), description_(std::move(description)), options_(options) {
    devices_.reserve(size_t(device_count));
    for (int32_t i = 0; i < device_count; ++i) devices_.push_back(std::make_unique<Device>());
}

CudaBackend::~CudaBackend() {
    for (size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i]->blas == nullptr) continue;
        // cublasDestroy synchronises with the handle's device, which must be current.
        if (cudaSetDevice(int(i)) == cudaSuccess) cublasDestroy(devices_[i]->blas);
    }
}

pagoda_status_t CudaBackend::check_device(int32_t device) const {
    if (device < 0 || device >= device_count())
        return fail(PAGODA_ERR_NOT_FOUND, "device " + std::to_string(device) +
                                              " does not exist (" +
                                              std::to_string(device_count()) + " CUDA devices)");
    return PAGODA_OK;
}

pagoda_status_t CudaBackend::use_device(int32_t device) const {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == device) return PAGODA_OK;
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
        return fail_cuda(e, "cudaSetDevice", device);
    return PAGODA_OK;
}

pagoda_status_t CudaBackend::fail(pagoda_status_t status, const std::string &message) const noexcept {
    try {
        t_last_failure = message;
        if (host_.set_error) host_.set_error(host_.ctx, ("cuda backend: " + message).c_str());
    } catch (...) {
        // Out of memory while building the message: the status alone must do.
    }
    return status;
}

const std::string &CudaBackend::last_failure() noexcept { return t_last_failure; }

pagoda_status_t CudaBackend::fail_cuda(cudaError_t error, const std::string &call,
                                       int32_t device) const {
    // Clears the thread's last-error slot so a later check does not report this failure again
    // (sticky errors, which poison the context, stay whatever we do).
    (void)cudaGetLastError();
    pagoda_status_t status =
        error == cudaErrorMemoryAllocation ? PAGODA_ERR_OUT_OF_MEMORY : PAGODA_ERR_BACKEND;
    return fail(status, call + " on " + device_name(device) + ": " + cudaGetErrorName(error) +
                            ": " + cudaGetErrorString(error));
}

pagoda_status_t CudaBackend::fail_cublas(cublasStatus_t status, const std::string &call,
                                         int32_t device) const {
    pagoda_status_t s =
        status == CUBLAS_STATUS_ALLOC_FAILED ? PAGODA_ERR_OUT_OF_MEMORY : PAGODA_ERR_BACKEND;
    return fail(s, call + " on " + device_name(device) + ": " + cublasGetStatusName(status) +
                       ": " + cublasGetStatusString(status));
}

void CudaBackend::log(pagoda_log_level_t level, const std::string &message) const noexcept {
    try {
        if (host_.log) host_.log(host_.ctx, level, ("cuda backend: " + message).c_str());
    } catch (...) {
    }
}

pagoda_status_t CudaBackend::make_blas(int32_t device, Device &d) {
    if (pagoda_status_t s = use_device(device); s != PAGODA_OK) return s;
    cublasHandle_t handle = nullptr;
    // A first matmul may come while a stream records a graph: the handle's own allocations are
    // made for real, not recorded (relaxed mode lets this thread allocate during a capture).
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    const cublasStatus_t created = cublasCreate(&handle);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (created != CUBLAS_STATUS_SUCCESS) return fail_cublas(created, "cublasCreate", device);
    // ops.h promises f32 compute. The default math mode keeps at least the precision that the
    // compute type asks for (CUBLAS_COMPUTE_32F, not _FAST_TF32), so no TF32; setting it
    // explicitly guards against a handle default changing. (CUBLAS_PEDANTIC_MATH is meant for
    // debugging and may be slower.)
    if (cublasStatus_t s = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
        s != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(handle);
        return fail_cublas(s, "cublasSetMathMode", device);
    }
    d.blas = handle;
    return PAGODA_OK;
}

std::string device_name(int32_t device) { return "cuda:" + std::to_string(device); }

std::string format_bytes(size_t bytes) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char text[32];
    if (u == 0)
        std::snprintf(text, sizeof text, "%zu bytes", bytes);
    else
        std::snprintf(text, sizeof text, "%.1f %s", v, units[u]);
    return text;
}

}  // namespace pagoda::cuda
