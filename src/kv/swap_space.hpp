// Host memory for KV blocks swapped out of the device: one pool per layer's K and V with the
// device pools' block layout, so PAGODA_OP_SWAP_BLOCKS copies whole blocks between them. The
// memory comes from the backend's host_buffer_alloc (pinned on GPUs) when it has one.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_allocator.hpp"
#include "kv/kv_geometry.hpp"
#include "runtime/device.hpp"

namespace pagoda::kv {

class SwapSpace {
public:
    // `num_blocks` may be 0 (no swap space). Throws OUT_OF_MEMORY naming the size.
    SwapSpace(const runtime::Device &device, const KvGeometry &geometry, int64_t num_blocks);
    ~SwapSpace();
    SwapSpace(const SwapSpace &) = delete;
    SwapSpace &operator=(const SwapSpace &) = delete;

    int64_t num_blocks() const noexcept { return allocator_.total(); }
    BlockAllocator &allocator() noexcept { return allocator_; }
    const BlockAllocator &allocator() const noexcept { return allocator_; }
    // The host pools in the device pools' order: layer 0 K, layer 0 V, layer 1 K, …
    const std::vector<void *> &pools() const noexcept { return pools_; }

private:
    const runtime::Device &device_;
    void *memory_ = nullptr;
    bool from_backend_ = false;
    BlockAllocator allocator_;
    std::vector<void *> pools_;
};

}  // namespace pagoda::kv
