// Streams (non-blocking CUDA streams) and events (without timing, the cheapest kind).
#include "cuda_backend.hpp"
#include "cuda_iface.hpp"

namespace pagoda::cuda {

pagoda_status_t stream_create(void *self, int32_t device, pagoda_backend_stream_t **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (out == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "stream_create: out is NULL");
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        auto stream = std::make_unique<pagoda_backend_stream>();
        stream->device = device;
        // Non-blocking: no implicit synchronisation with the legacy default stream, which a
        // host's own CUDA code might use.
        if (cudaError_t e = cudaStreamCreateWithFlags(&stream->stream, cudaStreamNonBlocking);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaStreamCreateWithFlags", device);
        // The error record starts clear (device_error.hpp); a synchronous memset, so it is
        // zero before any kernel on any stream can look at it.
        void *record = nullptr;
        cudaError_t e = cudaMalloc(&record, sizeof(DeviceError));
        const char *call = "cudaMalloc of the stream's error record";
        if (e == cudaSuccess) {
            e = cudaMemset(record, 0, sizeof(DeviceError));
            call = "cudaMemset of the stream's error record";
        }
        if (e != cudaSuccess) {
            pagoda_status_t s = cuda.fail_cuda(e, call, device);
            if (record != nullptr) (void)cudaFree(record);
            (void)cudaStreamDestroy(stream->stream);
            return s;
        }
        stream->error = static_cast<DeviceError *>(record);
        *out = stream.release();
        return PAGODA_OK;
    });
}

void stream_destroy(void *self, pagoda_backend_stream_t *stream) {
    if (stream == nullptr) return;
    CudaBackend &cuda = self_of(self);
    // The ABI destroys a stream after its work is done: waiting here also keeps host memory
    // that queued copies read from in use until they have read it.
    if (cuda.use_device(stream->device) == PAGODA_OK) {
        if (cudaError_t e = cudaStreamSynchronize(stream->stream); e != cudaSuccess) {
            (void)cudaGetLastError();
            cuda.log(PAGODA_LOG_ERROR, "stream_destroy: cudaStreamSynchronize on " +
                                           device_name(stream->device) + ": " +
                                           cudaGetErrorString(e));
        }
        // Its work is done, so nothing queued still uses the error record or the scratch. The
        // scratch came from the stream-ordered allocator and goes back the same way.
        if (stream->error != nullptr) (void)cudaFree(stream->error);
        if (stream->scratch != nullptr) (void)cudaFreeAsync(stream->scratch, stream->stream);
        for (void *old : stream->retired_scratch) (void)cudaFreeAsync(old, stream->stream);
        (void)cudaStreamDestroy(stream->stream);
        (void)cudaGetLastError();
    }
    delete stream;
}

pagoda_status_t stream_synchronize(void *self, pagoda_backend_stream_t *stream) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
        if (stream->capturing) return refuse_during_capture(cuda, *stream, "stream_synchronize");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        if (cudaError_t e = cudaStreamSynchronize(stream->stream); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaStreamSynchronize", stream->device);
        // An argument error a kernel found in device memory surfaces here, the first point at
        // which the host can see it (device_error.hpp). The record is read on the stream
        // itself, after its work, and cleared for the launches that follow.
        DeviceError found{};
        if (cudaError_t e = cudaMemcpyAsync(&found, stream->error, sizeof found,
                                            cudaMemcpyDeviceToHost, stream->stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaMemcpyAsync of the stream's error record",
                                  stream->device);
        if (cudaError_t e = cudaStreamSynchronize(stream->stream); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaStreamSynchronize", stream->device);
        if (found.field == 0) return PAGODA_OK;
        // Cleared in stream order: every later launch on the stream sees the empty record.
        if (cudaError_t e = cudaMemsetAsync(stream->error, 0, sizeof(DeviceError), stream->stream);
            e != cudaSuccess) {
            (void)cudaGetLastError();
            cuda.log(PAGODA_LOG_ERROR, "stream_synchronize: clearing the error record on " +
                                           device_name(stream->device) + ": " +
                                           cudaGetErrorString(e));
        }
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, describe(found));
    });
}

pagoda_status_t stream_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream, size_t bytes,
                               void **out) {
    if (bytes <= stream.scratch_bytes) {
        *out = stream.scratch;
        return PAGODA_OK;
    }
    // A recorded launch keeps the scratch's address; growing it here would record an allocation
    // (and free what earlier graphs use). Running the same work once before recording sizes it.
    if (stream.capturing)
        return refuse_during_capture(
            cuda, stream,
            "the stream's scratch must be sized by an eager run before capture: " +
                std::to_string(bytes) + " bytes needed, " + std::to_string(stream.scratch_bytes) +
                " held");
    // Grow geometrically (in whole MiB) so a slowly rising need reallocates rarely: the steady
    // state allocates nothing.
    constexpr size_t kMiB = size_t(1) << 20;
    size_t grown = stream.scratch_bytes * 2 > bytes ? stream.scratch_bytes * 2 : bytes;
    grown = (grown + kMiB - 1) / kMiB * kMiB;
    if (stream.scratch != nullptr) {
        if (stream.graphs_recorded) {
            // A graph recorded on this stream may still use it whenever it is launched.
            stream.retired_scratch.push_back(stream.scratch);
        } else if (cudaError_t e = cudaFreeAsync(stream.scratch, stream.stream); e != cudaSuccess) {
            // Stream-ordered: the buffer is released only after the work queued before it.
            return cuda.fail_cuda(e, "cudaFreeAsync of the stream's scratch", stream.device);
        }
        stream.scratch = nullptr;
        stream.scratch_bytes = 0;
    }
    void *p = nullptr;
    if (cudaError_t e = cudaMallocAsync(&p, grown, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e, "cudaMallocAsync of " + format_bytes(grown) + " of scratch",
                              stream.device);
    stream.scratch = p;
    stream.scratch_bytes = grown;
    *out = p;
    return PAGODA_OK;
}

pagoda_status_t event_create(void *self, int32_t device, uint32_t flags,
                             pagoda_backend_event_t **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (out == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_create: out is NULL");
        if ((flags & ~PAGODA_EVENT_TIMING) != 0)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "event_create: flags " + std::to_string(flags) + " has unknown bits");
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        auto event = std::make_unique<pagoda_backend_event>();
        event->device = device;
        // Events that keep no time are cheaper to record and to wait for.
        const unsigned cuda_flags =
            (flags & PAGODA_EVENT_TIMING) ? cudaEventDefault : cudaEventDisableTiming;
        if (cudaError_t e = cudaEventCreateWithFlags(&event->event, cuda_flags); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaEventCreateWithFlags", device);
        *out = event.release();
        return PAGODA_OK;
    });
}

void event_destroy(void *self, pagoda_backend_event_t *event) {
    if (event == nullptr) return;
    CudaBackend &cuda = self_of(self);
    if (cuda.use_device(event->device) == PAGODA_OK) (void)cudaEventDestroy(event->event);
    delete event;
}

pagoda_status_t event_record(void *self, pagoda_backend_event_t *event,
                             pagoda_backend_stream_t *stream) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (event == nullptr || stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_record: event or stream is NULL");
        // Recorded in a capture, the event would belong to the graph and fail every later use.
        if (stream->capturing) return refuse_during_capture(cuda, *stream, "event_record");
        // CUDA requires an event and the stream it is recorded on to share a device.
        if (event->device != stream->device)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "event_record: the event is on " + device_name(event->device) +
                                 " but the stream is on " + device_name(stream->device));
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        if (cudaError_t e = cudaEventRecord(event->event, stream->stream); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaEventRecord", stream->device);
        return PAGODA_OK;
    });
}

pagoda_status_t stream_wait_event(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_event_t *event) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (event == nullptr || stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "stream_wait_event: stream or event is NULL");
        if (stream->capturing) return refuse_during_capture(cuda, *stream, "stream_wait_event");
        // Waiting on another device's event is allowed: that is how devices hand work over.
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        if (cudaError_t e = cudaStreamWaitEvent(stream->stream, event->event, 0); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaStreamWaitEvent", stream->device);
        return PAGODA_OK;
    });
}

pagoda_status_t event_synchronize(void *self, pagoda_backend_event_t *event) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (event == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_synchronize: event is NULL");
        if (cudaError_t e = cudaEventSynchronize(event->event); e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaEventSynchronize", event->device);
        return PAGODA_OK;
    });
}

// cudaErrorNotReady is "not yet", not a failure.
pagoda_status_t stream_query(void *self, pagoda_backend_stream_t *stream, uint32_t *complete) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr || complete == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "stream_query: stream or complete is NULL");
        if (stream->capturing) return refuse_during_capture(cuda, *stream, "stream_query");
        cudaError_t e = cudaStreamQuery(stream->stream);
        if (e != cudaSuccess && e != cudaErrorNotReady)
            return cuda.fail_cuda(e, "cudaStreamQuery", stream->device);
        *complete = e == cudaSuccess ? 1u : 0u;
        return PAGODA_OK;
    });
}

pagoda_status_t event_query(void *self, pagoda_backend_event_t *event, uint32_t *complete) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (event == nullptr || complete == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_query: event or complete is NULL");
        cudaError_t e = cudaEventQuery(event->event);
        if (e != cudaSuccess && e != cudaErrorNotReady)
            return cuda.fail_cuda(e, "cudaEventQuery", event->device);
        *complete = e == cudaSuccess ? 1u : 0u;
        return PAGODA_OK;
    });
}

pagoda_status_t event_elapsed(void *self, pagoda_backend_event_t *start,
                              pagoda_backend_event_t *end, float *milliseconds) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (start == nullptr || end == nullptr || milliseconds == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_elapsed: an argument is NULL");
        if (cudaError_t e = cudaEventElapsedTime(milliseconds, start->event, end->event);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "cudaEventElapsedTime", start->device);
        return PAGODA_OK;
    });
}

}  // namespace pagoda::cuda
