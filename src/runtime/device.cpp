#include "runtime/device.hpp"

#include <cstddef>
#include <utility>

#include "common/error.hpp"
#include "formats/names.hpp"
#include "pagoda/ops.h"

namespace pagoda::runtime {

namespace {

std::string last_message() {
    std::string m = last_error();
    return m.empty() ? "no message" : m;
}

}  // namespace

Device::Device(const pagoda_backend *backend, int32_t index)
    : backend_(checked_backend(backend)), iface_(nullptr), index_(index) {
    if (backend_ == nullptr) throw Error(PAGODA_ERR_INVALID_HANDLE, "backend handle is not a live backend");
    iface_ = backend_->iface;
    name_ = backend_->name + ":" + std::to_string(index);
    int32_t count = 0;
    check(iface_->device_count(iface_->self, &count), "counting devices");
    if (index < 0 || index >= count)
        throw Error(PAGODA_ERR_NOT_FOUND, "device " + name_ + " does not exist (backend '" +
                                              backend_->name + "' has " + std::to_string(count) +
                                              " device(s))");
    info_.struct_size = sizeof(info_);
    check(iface_->device_info(iface_->self, index, &info_), "reading device info");
}

std::vector<std::string> Device::kernel_variants(pagoda_op_t op) const {
    // A plugin's kernel table ends where its struct_size says; the slot is from ABI 1.6.
    const pagoda_backend_kernels_t *k = iface_->kernels;
    constexpr size_t kSlotEnd = offsetof(pagoda_backend_kernels_t, variant_name) +
                                sizeof(pagoda_backend_kernels_t::variant_name);
    std::vector<std::string> names;
    if (k == nullptr || k->struct_size < kSlotEnd || k->variant_name == nullptr) return names;
    // A bound, in case a plugin never answers NULL.
    constexpr int32_t kMaxVariants = 64;
    for (int32_t v = 1; v <= kMaxVariants; ++v) {
        const char *name = k->variant_name(iface_->self, index_, op, v);
        if (name == nullptr) break;
        names.emplace_back(name);
    }
    return names;
}

void Device::check(pagoda_status_t status, const char *what) const {
    if (status == PAGODA_OK) return;
    throw Error(status == PAGODA_ERR_OUT_OF_MEMORY ? status : PAGODA_ERR_BACKEND,
                name_ + ": " + what + " failed: " + last_message());
}

void *Device::alloc(size_t bytes, const std::string &what) const {
    void *ptr = nullptr;
    pagoda_status_t s = iface_->buffer_alloc(iface_->self, index_, bytes, &ptr);
    if (s != PAGODA_OK)
        throw Error(s == PAGODA_ERR_OUT_OF_MEMORY ? s : PAGODA_ERR_BACKEND,
                    name_ + ": allocating " + std::to_string(bytes) + " bytes for " + what +
                        " failed: " + last_message());
    return ptr;
}

void Device::free(void *ptr) const noexcept {
    if (ptr != nullptr) iface_->buffer_free(iface_->self, index_, ptr);
}

DeviceBuffer::DeviceBuffer(const Device &device, size_t bytes, const std::string &what)
    : device_(&device), ptr_(device.alloc(bytes, what)), bytes_(bytes) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
    if (this != &other) {
        reset();
        device_ = std::exchange(other.device_, nullptr);
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void DeviceBuffer::reset() noexcept {
    if (device_ != nullptr) device_->free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
}

Stream::Stream(const Device &device) : device_(&device) {
    device.check(device.iface().stream_create(device.iface().self, device.index(), &stream_),
                 "creating a stream");
}

Stream::~Stream() {
    if (stream_ != nullptr) device_->iface().stream_destroy(device_->iface().self, stream_);
}

void Stream::launch(pagoda_op_t op, const void *args) const {
    const pagoda_backend_iface_t &f = device_->iface();
    pagoda_status_t s = f.kernels->launch(f.self, stream_, op, args);
    if (s != PAGODA_OK)
        throw Error(PAGODA_ERR_BACKEND, device_->name() + ": " + formats::op_name(op) +
                                            " failed: " + last_message());
}

void Stream::copy(void *dst, const void *src, size_t bytes, pagoda_copy_kind_t kind) const {
    if (bytes == 0) return;
    device_->check(device_->iface().copy(device_->iface().self, stream_, dst, src, bytes, kind),
                   "copying");
}

void Stream::memset(void *dst, int value, size_t bytes) const {
    if (bytes == 0) return;
    device_->check(device_->iface().memset(device_->iface().self, stream_, dst, value, bytes),
                   "setting device memory");
}

void Stream::synchronize() const {
    device_->check(device_->iface().stream_synchronize(device_->iface().self, stream_),
                   "synchronizing a stream");
}

bool Stream::supports_graphs() const noexcept {
    // The loader accepts the four graph slots only all set or all NULL.
    return device_->iface().graph_capture_begin != nullptr;
}

void Stream::begin_capture() const {
    if (!supports_graphs())
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    device_->name() + ": the backend '" + device_->backend()->name +
                        "' cannot record graphs");
    device_->check(device_->iface().graph_capture_begin(device_->iface().self, stream_),
                   "beginning a graph capture");
}

Graph Stream::end_capture() const {
    if (!supports_graphs())
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    device_->name() + ": the backend '" + device_->backend()->name +
                        "' cannot record graphs");
    pagoda_backend_graph_t *graph = nullptr;
    device_->check(device_->iface().graph_capture_end(device_->iface().self, stream_, &graph),
                   "recording a graph");
    return Graph(*device_, graph);
}

Graph &Graph::operator=(Graph &&other) noexcept {
    if (this != &other) {
        reset();
        device_ = std::exchange(other.device_, nullptr);
        graph_ = std::exchange(other.graph_, nullptr);
    }
    return *this;
}

void Graph::launch(const Stream &stream) const {
    if (graph_ == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, stream.device().name() + ": launching an empty graph");
    device_->check(device_->iface().graph_launch(device_->iface().self, graph_, stream.get()),
                   "launching a graph");
}

void Graph::reset() noexcept {
    if (graph_ != nullptr) device_->iface().graph_destroy(device_->iface().self, graph_);
    graph_ = nullptr;
}

}  // namespace pagoda::runtime
