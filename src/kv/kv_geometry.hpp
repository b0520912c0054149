// The shape of a paged KV cache: what every layer's key and value pools hold. Layout is
// pagoda_kv_layout_t's [num_blocks][n_kv_heads][block_size][head_dim] per pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/dtypes.hpp"
#include "pagoda/dtype.h"

namespace pagoda::kv {

struct KvGeometry {
    pagoda_dtype_t dtype = PAGODA_DTYPE_F32;
    int32_t block_size = 16;  // tokens per block
    int64_t num_blocks = 0;   // blocks in each pool
    int64_t n_layers = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;

    // Bytes of one block in one pool (one layer's K, or its V).
    size_t block_bytes() const {
        return static_cast<size_t>(n_kv_heads) * static_cast<size_t>(block_size) *
               static_cast<size_t>(head_dim) * pagoda::formats::dtype_size(dtype);
    }
    // Bytes one block costs across all pools (K and V of every layer).
    size_t bytes_per_block_all_layers() const { return 2 * static_cast<size_t>(n_layers) * block_bytes(); }
    size_t pool_bytes() const { return block_bytes() * static_cast<size_t>(num_blocks); }
};

// One layer's two pools on the device.
struct LayerPools {
    void *k = nullptr;
    void *v = nullptr;
};

}  // namespace pagoda::kv
