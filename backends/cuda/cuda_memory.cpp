// Device memory (cudaMalloc), pinned host memory (cudaHostAlloc), and copies and memsets ordered
// on a stream.
#include <cstring>
#include <memory>

#include "cuda_backend.hpp"
#include "cuda_iface.hpp"

namespace pagoda::cuda {

namespace {

// cudaMalloc(0) succeeds with NULL; the ABI wants an address even for an empty buffer, and
// cudaMalloc's own alignment (256 bytes or more) is the ABI's promise.
constexpr size_t kMinAllocation = 256;

// Host-to-host copies run as a host function on the stream, so they happen after the stream's
// earlier work (a device-to-host copy into `src`, say) and before its later work, like every
// other copy kind. A host-to-host cudaMemcpyAsync is "fully synchronous with respect to the
// host" (CUDA's API synchronization notes) and is not promised to wait for the stream first.
struct HostCopy {
    void *dst;
    const void *src;
    size_t size;
};

void CUDART_CB run_host_copy(void *data) {
    std::unique_ptr<HostCopy> c(static_cast<HostCopy *>(data));
    std::memmove(c->dst, c->src, c->size);
}

}  // namespace

pagoda_status_t buffer_alloc(void *self, int32_t device, size_t size, void **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (out == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "buffer_alloc: out is NULL");
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        void *p = nullptr;
        if (cudaError_t e = cudaMalloc(&p, size < kMinAllocation ? kMinAllocation : size);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaMalloc of " + format_bytes(size), device);
        *out = p;
        return PAGODA_OK;
    });
}

void buffer_free(void *self, int32_t device, void *ptr) {
    CudaBackend &cuda = self_of(self);
    if (ptr == nullptr || cuda.check_device(device) != PAGODA_OK) return;
    // cudaFree of memory from another device works under unified addressing, but making the
    // owner current keeps the implicit synchronisation on the right device.
    if (cuda.use_device(device) != PAGODA_OK) return;
    if (cudaError_t e = cudaFree(ptr); e != cudaSuccess) {
        (void)cudaGetLastError();
        cuda.log(PAGODA_LOG_ERROR, "cudaFree on " + device_name(device) + ": " +
                                       cudaGetErrorString(e));
    }
}

pagoda_status_t host_buffer_alloc(void *self, size_t size, void **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (out == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "host_buffer_alloc: out is NULL");
        void *p = nullptr;
        // Portable: pinned for every device's context, not only the current one's.
        if (cudaError_t e = cudaHostAlloc(&p, size < kMinAllocation ? kMinAllocation : size,
                                          cudaHostAllocPortable);
            e != cudaSuccess) {
            int current = 0;
            (void)cudaGetDevice(&current);
            return cuda.fail_cuda(e, "cudaHostAlloc of " + format_bytes(size) + " pinned host memory",
                                  current);
        }
        *out = p;
        return PAGODA_OK;
    });
}

void host_buffer_free(void *self, void *ptr) {
    CudaBackend &cuda = self_of(self);
    if (ptr == nullptr) return;
    if (cudaError_t e = cudaFreeHost(ptr); e != cudaSuccess) {
        (void)cudaGetLastError();
        cuda.log(PAGODA_LOG_ERROR, std::string("cudaFreeHost: ") + cudaGetErrorString(e));
    }
}

pagoda_status_t copy(void *self, pagoda_backend_stream_t *stream, void *dst, const void *src,
                     size_t size, pagoda_copy_kind_t kind) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "copy: stream is NULL");
        if (size == 0) return PAGODA_OK;
        if (dst == nullptr || src == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "copy: dst or src is NULL");
        cudaMemcpyKind direction;
        switch (kind) {
            case PAGODA_COPY_HOST_TO_DEVICE: direction = cudaMemcpyHostToDevice; break;
            case PAGODA_COPY_DEVICE_TO_HOST: direction = cudaMemcpyDeviceToHost; break;
            // Default lets unified addressing find both devices, so peer copies work too.
            case PAGODA_COPY_DEVICE_TO_DEVICE: direction = cudaMemcpyDefault; break;
            case PAGODA_COPY_HOST_TO_HOST: direction = cudaMemcpyHostToHost; break;
            default:
                return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                                 "copy: unknown copy kind " + std::to_string(int(kind)));
        }
        // A recorded copy would read or write the host memory each time the graph runs, long
        // after the caller's buffer may be gone: only device-to-device copies are recorded.
        if (stream->capturing && kind != PAGODA_COPY_DEVICE_TO_DEVICE)
            return refuse_during_capture(
                cuda, *stream,
                "copy: a copy from or to host memory cannot be recorded into a graph (copy before "
                "or after the capture)");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        if (direction == cudaMemcpyHostToHost) {
            auto job = std::make_unique<HostCopy>(HostCopy{dst, src, size});
            if (cudaError_t e = cudaLaunchHostFunc(stream->stream, run_host_copy, job.get());
                e != cudaSuccess)
                return cuda.fail_cuda(e, "cudaLaunchHostFunc (host-to-host copy)", stream->device);
            job.release();  // run_host_copy owns it now
            return PAGODA_OK;
        }
        if (cudaError_t e = cudaMemcpyAsync(dst, src, size, direction, stream->stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaMemcpyAsync of " + format_bytes(size), stream->device);
        return PAGODA_OK;
    });
}

pagoda_status_t memset_async(void *self, pagoda_backend_stream_t *stream, void *dst, int value,
                             size_t size) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "memset: stream is NULL");
        if (size == 0) return PAGODA_OK;
        if (dst == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "memset: dst is NULL");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        if (cudaError_t e = cudaMemsetAsync(dst, value, size, stream->stream); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaMemsetAsync of " + format_bytes(size), stream->device);
        return PAGODA_OK;
    });
}

}  // namespace pagoda::cuda
