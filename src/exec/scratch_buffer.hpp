// Device scratch memory that keeps its capacity: grown when a step needs more, never shrunk, so
// steady-state steps allocate nothing.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/device.hpp"

namespace pagoda::exec {

class ScratchBuffer {
public:
    explicit ScratchBuffer(const char *what) : what_(what) {}

    // At least `bytes` bytes; reallocates (dropping the contents) only when the capacity is short,
    // and then by half as much again, so a batch that grows a little each step does not reallocate
    // each step. The caller must not have work queued that still reads the old memory.
    void *reserve(const runtime::Device &device, size_t bytes) {
        if (bytes == 0) bytes = 1;  // an empty array still gets an address
        if (bytes > buffer_.bytes()) {
            const size_t grown = buffer_.bytes() + buffer_.bytes() / 2;
            buffer_.reset();
            buffer_ = runtime::DeviceBuffer(device, bytes > grown ? bytes : grown,
                                            std::string("scratch for ") + what_);
        }
        return buffer_.get();
    }
    // What the last reserve() returned.
    void *get() const noexcept { return buffer_.get(); }
    size_t capacity() const noexcept { return buffer_.bytes(); }

private:
    const char *what_;
    runtime::DeviceBuffer buffer_;
};

}  // namespace pagoda::exec
