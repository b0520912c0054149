// The CUDA backend's state: the host's services, one entry per device (its cuBLAS handle), and
// the error path that every CUDA, cuBLAS and NCCL failure goes through.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "pagoda/backend.h"

namespace pagoda::cuda {

class CudaBackend {
public:
    CudaBackend(const pagoda_backend_host_t &host, int32_t device_count, std::string description);
    ~CudaBackend();
    CudaBackend(const CudaBackend &) = delete;
    CudaBackend &operator=(const CudaBackend &) = delete;

    int32_t device_count() const noexcept { return int32_t(devices_.size()); }
    const std::string &description() const noexcept { return description_; }

    // PAGODA_ERR_NOT_FOUND (with a message) unless 0 ≤ device < device_count().
    pagoda_status_t check_device(int32_t device) const;

    // Makes `device` current on the calling thread. The previous device is not restored: in
    // CUDA 12+ cudaSetDevice creates that device's primary context, which would cost memory on
    // GPUs this process never uses; Pagoda's threads each stay on one device anyway.
    pagoda_status_t use_device(int32_t device) const;

    // Records `message` as the calling thread's error (through the host) and returns `status`.
    pagoda_status_t fail(pagoda_status_t status, const std::string &message) const noexcept;
    // "<call> on cuda:<device>: <cudaErrorName>: <cudaGetErrorString>"; an allocation failure
    // maps to PAGODA_ERR_OUT_OF_MEMORY, everything else to PAGODA_ERR_BACKEND.
    pagoda_status_t fail_cuda(cudaError_t error, const std::string &call, int32_t device) const;
    pagoda_status_t fail_cublas(cublasStatus_t status, const std::string &call,
                                int32_t device) const;
    void log(pagoda_log_level_t level, const std::string &message) const noexcept;

    // Runs `body(handle)` with the device's cuBLAS handle bound to `stream`. The handle is made
    // on first use (it allocates workspace on the device) and its use is serialised, because
    // binding a stream is handle-wide state that two threads would otherwise race on.
    template <typename Body>
    pagoda_status_t with_blas(int32_t device, cudaStream_t stream, Body &&body);

private:
    struct Device {
        std::mutex mutex;  // guards `blas` and the stream bound to it
        cublasHandle_t blas = nullptr;
    };

    pagoda_status_t make_blas(int32_t device, Device &d);

    pagoda_backend_host_t host_;
    std::string description_;
    std::vector<std::unique_ptr<Device>> devices_;
};

template <typename Body>
pagoda_status_t CudaBackend::with_blas(int32_t device, cudaStream_t stream, Body &&body) {
    Device &d = *devices_[size_t(device)];
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.blas == nullptr) {
        if (pagoda_status_t s = make_blas(device, d); s != PAGODA_OK) return s;
    }
    if (cublasStatus_t s = cublasSetStream(d.blas, stream); s != CUBLAS_STATUS_SUCCESS)
        return fail_cublas(s, "cublasSetStream", device);
    return body(d.blas);
}

// Runs a table function's body so that no C++ exception crosses the plugin ABI.
template <typename Body>
pagoda_status_t guarded(const CudaBackend &cuda, Body &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return cuda.fail(PAGODA_ERR_OUT_OF_MEMORY, "out of host memory");
    } catch (...) {
        return cuda.fail(PAGODA_ERR_INTERNAL, "unexpected exception in the CUDA backend");
    }
}

// "cuda:3", the device's name in messages.
std::string device_name(int32_t device);
// "2.0 GiB", for messages about sizes.
std::string format_bytes(size_t bytes);

// The plugin state and its table live together so destroy frees both; `self` points here.
struct Instance {
    CudaBackend backend;
    pagoda_backend_iface_t iface{};
    Instance(const pagoda_backend_host_t &host, int32_t devices, std::string description)
        : backend(host, devices, std::move(description)) {}
};

inline CudaBackend &self_of(void *self) { return static_cast<Instance *>(self)->backend; }

}  // namespace pagoda::cuda

// The ABI's opaque types are these structs in this backend.
struct pagoda_backend_stream {
    int32_t device = 0;
    cudaStream_t stream = nullptr;
};

struct pagoda_backend_event {
    int32_t device = 0;
    cudaEvent_t event = nullptr;
};
