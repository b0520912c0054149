// Device memory handed out in pieces from a few large buffers, all freed together: a model's
// weights as a handful of allocations rather than one per tensor. On the CPU backend this also
// keeps every weight on huge pages (its buffers of 2 MiB and more get them) without rounding each
// tensor up to a whole one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/device.hpp"

namespace pagoda::runtime {

class DeviceArena {
public:
    // Every piece starts at a multiple of this (the plugin ABI's buffer alignment).
    static constexpr size_t kAlignment = 256;
    // Buffers start small, so a tiny model takes little, and double up to a size beside which
    // the end a buffer leaves unused is small. A larger piece gets a buffer of its own size.
    static constexpr size_t kFirstBufferBytes = size_t(4) << 20;
    static constexpr size_t kLargestBufferBytes = size_t(64) << 20;

    explicit DeviceArena(const Device &device) : device_(&device) {}
    DeviceArena(const DeviceArena &) = delete;
    DeviceArena &operator=(const DeviceArena &) = delete;

    // `bytes` of the device's memory, valid until the arena goes; throws as DeviceBuffer does,
    // with `what` naming the piece.
    void *allocate(size_t bytes, const std::string &what);
    // Bytes the arena holds from the device, used or not.
    size_t reserved_bytes() const noexcept;
    size_t buffer_count() const noexcept { return buffers_.size(); }

private:
    struct Buffer {
        DeviceBuffer memory;
        size_t used = 0;
    };
    const Device *device_;
    std::vector<Buffer> buffers_;
    size_t next_buffer_bytes_ = kFirstBufferBytes;
};

}  // namespace pagoda::runtime
