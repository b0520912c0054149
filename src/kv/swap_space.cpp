#include "kv/swap_space.hpp"

#include <cstdlib>
#include <string>

#include "common/error.hpp"

namespace pagoda::kv {

SwapSpace::SwapSpace(const runtime::Device &device, const KvGeometry &geometry, int64_t layers_held,
                     int64_t num_blocks)
    : device_(device) {
    if (num_blocks <= 0 || layers_held <= 0) return;
    const size_t pool_bytes = geometry.block_bytes() * static_cast<size_t>(num_blocks);
    const size_t total = pool_bytes * 2 * static_cast<size_t>(layers_held);
    const pagoda_backend_iface_t &iface = device.iface();
    if (iface.host_buffer_alloc != nullptr) {
        device.check(iface.host_buffer_alloc(iface.self, total, &memory_), "allocating KV swap space");
        from_backend_ = true;
    } else {
        memory_ = std::malloc(total);
    }
    if (memory_ == nullptr)
        throw Error(PAGODA_ERR_OUT_OF_MEMORY, "allocating " + std::to_string(total) +
                                                  " bytes of host KV swap space failed");
    for (int64_t i = 0; i < 2 * layers_held; ++i)
        pools_.push_back(static_cast<char *>(memory_) + static_cast<size_t>(i) * pool_bytes);
}

SwapSpace::~SwapSpace() {
    if (memory_ == nullptr) return;
    if (from_backend_)
        device_.iface().host_buffer_free(device_.iface().self, memory_);
    else
        std::free(memory_);
}

}  // namespace pagoda::kv
