#include "runtime/device_arena.hpp"

#include <algorithm>

namespace pagoda::runtime {

void *DeviceArena::allocate(size_t bytes, const std::string &what) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    // First fit: a later small piece fills the end a large one left in an earlier buffer.
    for (Buffer &b : buffers_)
        if (b.memory.bytes() - b.used >= rounded) {
            void *at = static_cast<unsigned char *>(b.memory.get()) + b.used;
            b.used += rounded;
            return at;
        }
    const size_t size = std::max(rounded, next_buffer_bytes_);
    next_buffer_bytes_ = std::min(next_buffer_bytes_ * 2, kLargestBufferBytes);
    buffers_.push_back({DeviceBuffer(*device_, size, what), rounded});
    return buffers_.back().memory.get();
}

size_t DeviceArena::reserved_bytes() const noexcept {
    size_t total = 0;
    for (const Buffer &b : buffers_) total += b.memory.bytes();
    return total;
}

}  // namespace pagoda::runtime
