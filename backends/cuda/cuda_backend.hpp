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

#include "device_error.hpp"
#include "pagoda/backend.h"
#include "reporter.hpp"

namespace pagoda::cuda {

// The plugin's configuration, parsed by cuda_plugin.cpp from "key=value" pairs.
struct CudaOptions {
    // tf32=1: f32 GEMMs may round their inputs to TF32 on tensor cores. ops.h promises f32
    // compute, so only the host may trade that away.
    bool tf32 = false;
    // nccl_timeout_ms: how long communicator creation, a collective's enqueue and a
    // communicator's teardown may wait for the other ranks before the communicator is aborted.
    int64_t nccl_timeout_ms = 600000;
};

// cuda_gemm.cpp's per-device state (cuBLASLt handle, plans, scratch); made on first use and
// freed with the backend through the deleter, which cuda_gemm.cpp defines.
struct MatmulState;
struct MatmulStateDeleter {
    void operator()(MatmulState *state) const noexcept;
};
using MatmulStatePtr = std::unique_ptr<MatmulState, MatmulStateDeleter>;

class CudaBackend final : public plugin::Reporter {
public:
    CudaBackend(const pagoda_backend_host_t &host, int32_t device_count, std::string description,
                CudaOptions options = {});
    ~CudaBackend();
    CudaBackend(const CudaBackend &) = delete;
    CudaBackend &operator=(const CudaBackend &) = delete;

    int32_t device_count() const noexcept { return int32_t(devices_.size()); }
    const std::string &description() const noexcept { return description_; }
    const CudaOptions &options() const noexcept { return options_; }

    // PAGODA_ERR_NOT_FOUND (with a message) unless 0 ≤ device < device_count().
    pagoda_status_t check_device(int32_t device) const;

    // Makes `device` current on the calling thread. The previous device is not restored: in
    // CUDA 12+ cudaSetDevice creates that device's primary context, which would cost memory on
    // GPUs this process never uses; Pagoda's threads each stay on one device anyway.
    pagoda_status_t use_device(int32_t device) const;

    // Records `message` as the calling thread's error (through the host) and returns `status`.
    pagoda_status_t fail(pagoda_status_t status, const std::string &message) const noexcept override;
    // The calling thread's last fail() message, so a graph recording can say what spoilt it.
    static const std::string &last_failure() noexcept;
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
    // with_blas, also handing `body` the device's matmul state (null until cuda_gemm.cpp
    // makes it): `body(handle, state)`, under the same lock.
    template <typename Body>
    pagoda_status_t with_matmul(int32_t device, cudaStream_t stream, Body &&body);

private:
    struct Device {
        std::mutex mutex;  // guards `blas`, the stream bound to it, and `matmul`
        cublasHandle_t blas = nullptr;
        MatmulStatePtr matmul;
    };

    pagoda_status_t make_blas(int32_t device, Device &d);

    pagoda_backend_host_t host_;
    std::string description_;
    CudaOptions options_;
    std::vector<std::unique_ptr<Device>> devices_;
};

template <typename Body>
pagoda_status_t CudaBackend::with_blas(int32_t device, cudaStream_t stream, Body &&body) {
    return with_matmul(device, stream,
                       [&](cublasHandle_t handle, MatmulStatePtr &) { return body(handle); });
}

template <typename Body>
pagoda_status_t CudaBackend::with_matmul(int32_t device, cudaStream_t stream, Body &&body) {
    Device &d = *devices_[size_t(device)];
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.blas == nullptr) {
        if (pagoda_status_t s = make_blas(device, d); s != PAGODA_OK) return s;
    }
    if (cublasStatus_t s = cublasSetStream(d.blas, stream); s != CUBLAS_STATUS_SUCCESS)
        return fail_cublas(s, "cublasSetStream", device);
    return body(d.blas, d.matmul);
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
    Instance(const pagoda_backend_host_t &host, int32_t devices, std::string description,
             CudaOptions options = {})
        : backend(host, devices, std::move(description), options) {}
};

inline CudaBackend &self_of(void *self) { return static_cast<Instance *>(self)->backend; }

}  // namespace pagoda::cuda

// The ABI's opaque types are these structs in this backend.
struct pagoda_backend_stream {
    int32_t device = 0;
    cudaStream_t stream = nullptr;
    // Device memory: the first data-dependent argument error a kernel on this stream found
    // (device_error.hpp); stream_synchronize reports and clears it.
    pagoda::cuda::DeviceError *error = nullptr;
    // Device memory that kernels on this stream use between launches (paged attention's
    // partial results, copy_blocks' pointer tables). Stream-ordered, so launches on the stream
    // can share it; grown by stream_scratch, freed by stream_destroy.
    void *scratch = nullptr;
    size_t scratch_bytes = 0;
    // Between graph_capture_begin and graph_capture_end (cuda_graphs.cpp): work is recorded,
    // so nothing may allocate, synchronize or touch host memory; the first refusal is kept
    // here and graph_capture_end reports it.
    bool capturing = false;
    std::string capture_spoilt;
    // Once a graph was recorded on this stream it may hold the scratch's address: outgrown
    // scratch buffers are kept, not freed, until stream_destroy.
    bool graphs_recorded = false;
    std::vector<void *> retired_scratch;
};

namespace pagoda::cuda {
// At least `bytes` of the stream's scratch in `*out` (cuda_streams.cpp). Growing frees the old
// buffer and allocates the new one in stream order, so work already queued keeps its memory.
pagoda_status_t stream_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream, size_t bytes,
                               void **out);
// Fails `what` (something a recording stream cannot record) with a message saying so, and keeps
// it as the reason the recording is spoilt (cuda_graphs.cpp).
pagoda_status_t refuse_during_capture(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                      const std::string &what);
// Runs `launch` (a graph launch on `stream`) ordered with the device's shared matmul scratch, as
// each eager matmul is: recorded matmuls skip that ordering (cuda_gemm.cpp).
pagoda_status_t order_with_matmul_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                          pagoda_status_t (*launch)(void *), void *context);
}  // namespace pagoda::cuda

struct pagoda_backend_event {
    int32_t device = 0;
    cudaEvent_t event = nullptr;
};
