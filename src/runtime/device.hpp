// One device of one loaded backend, as the core drives it: memory, a stream, copies and kernel
// launches, each failure turned into an Error that names the device and what was being done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/loaded_backend.hpp"
#include "pagoda/backend.h"

namespace pagoda::runtime {

class Device {
public:
    // Checks that `backend` has device `index`; throws NOT_FOUND otherwise. Creates no stream.
    Device(const pagoda_backend *backend, int32_t index);

    const std::string &name() const noexcept { return name_; }  // "cpu:0"
    const pagoda_device_info_t &info() const noexcept { return info_; }
    int32_t index() const noexcept { return index_; }
    const pagoda_backend *backend() const noexcept { return backend_; }
    const pagoda_backend_iface_t &iface() const noexcept { return *iface_; }
    // Kernels may read host memory (mmapped weights) directly: no upload needed.
    bool uses_host_weights() const noexcept { return (info_.flags & PAGODA_DEVICE_USES_HOST_WEIGHTS) != 0; }
    bool host_accessible() const noexcept { return (info_.flags & PAGODA_DEVICE_HOST_ACCESSIBLE) != 0; }

    // The names of the backend's kernel variants of `op` (ops.h's `variant` i is entry i - 1);
    // empty when it offers none (a plugin older than ABI 1.6, or an op without variants).
    std::vector<std::string> kernel_variants(pagoda_op_t op) const;

    // Throws OUT_OF_MEMORY (or what the backend says) naming `what` and the size.
    void *alloc(size_t bytes, const std::string &what) const;
    void free(void *ptr) const noexcept;

    // Throws BACKEND naming `what` with the backend's message; `what` is built only on failure.
    void check(pagoda_status_t status, const char *what) const;

private:
    const pagoda_backend *backend_;
    const pagoda_backend_iface_t *iface_;
    int32_t index_;
    std::string name_;
    pagoda_device_info_t info_{};
};

// Device memory owned for its lifetime.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const Device &device, size_t bytes, const std::string &what);
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
    DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;

    void *get() const noexcept { return ptr_; }
    size_t bytes() const noexcept { return bytes_; }
    void reset() noexcept;

private:
    const Device *device_ = nullptr;
    void *ptr_ = nullptr;
    size_t bytes_ = 0;
};

class Stream;

// Work recorded from a stream (Stream::end_capture), launched again and again on that stream
// with whatever its device memory then holds. Released through the backend's graph_destroy.
class Graph {
public:
    Graph() = default;
    ~Graph() { reset(); }
    Graph(Graph &&other) noexcept { *this = std::move(other); }
    Graph &operator=(Graph &&other) noexcept;
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;

    explicit operator bool() const noexcept { return graph_ != nullptr; }
    // Queues the recorded work on `stream`, which must be the stream it was recorded on.
    // Throws BACKEND naming the device.
    void launch(const Stream &stream) const;
    void reset() noexcept;

private:
    friend class Stream;
    Graph(const Device &device, pagoda_backend_graph_t *graph) : device_(&device), graph_(graph) {}

    const Device *device_ = nullptr;
    pagoda_backend_graph_t *graph_ = nullptr;
};

// A stream on a device, with the calls the executor makes on it.
class Stream {
public:
    explicit Stream(const Device &device);
    ~Stream();
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    const Device &device() const noexcept { return *device_; }
    pagoda_backend_stream_t *get() const noexcept { return stream_; }

    // Runs `op` with `args` (an ops.h struct); throws BACKEND naming the op on failure.
    void launch(pagoda_op_t op, const void *args) const;
    void copy(void *dst, const void *src, size_t bytes, pagoda_copy_kind_t kind) const;
    void memset(void *dst, int value, size_t bytes) const;
    void synchronize() const;

    // Whether the backend can record this stream's work as a graph (the ABI 1.1 graph slots).
    bool supports_graphs() const noexcept;
    // Starts recording: until end_capture, launches, memsets and device-to-device copies are
    // recorded, not run. Throws UNSUPPORTED without graphs, BACKEND when the backend refuses.
    void begin_capture() const;
    // Ends the recording and returns it; throws BACKEND (naming the device and the backend's
    // reason) when something issued during the recording spoilt it. The stream runs work again
    // either way.
    Graph end_capture() const;

private:
    const Device *device_;
    pagoda_backend_stream_t *stream_ = nullptr;
};

}  // namespace pagoda::runtime
