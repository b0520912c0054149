// Host memory for KV blocks swapped out of one device: a pool per K and V of each layer the
// device holds, with the device pools' block layout, so PAGODA_OP_SWAP_BLOCKS copies whole
// blocks between them. The memory comes from the backend's host_buffer_alloc (pinned on GPUs)
// when it has one. Which swap blocks are taken is the cache's business (KvCache keeps one
// allocator for all its devices, so a swapped block has the same id on each).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_geometry.hpp"
#include "runtime/device.hpp"

namespace pagoda::kv {

class SwapSpace {
public:
    // `num_blocks` may be 0 (no swap space). Throws OUT_OF_MEMORY naming the size.
    SwapSpace(const runtime::Device &device, const KvGeometry &geometry, int64_t layers_held,
              int64_t num_blocks);
    ~SwapSpace();
    SwapSpace(const SwapSpace &) = delete;
    SwapSpace &operator=(const SwapSpace &) = delete;

    // The host pools in the device pools' order: first layer's K, its V, the next layer's K, …
    const std::vector<void *> &pools() const noexcept { return pools_; }

private:
    const runtime::Device &device_;
    void *memory_ = nullptr;
    bool from_backend_ = false;
    std::vector<void *> pools_;
};

}  // namespace pagoda::kv
