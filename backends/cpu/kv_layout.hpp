// The paged KV cache as the CPU kernels address it: PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN, that is
// [num_blocks][n_kv_heads][block_size][head_dim], so one head's tokens in a block are contiguous
// rows. Shared by kv_write.cpp and paged_attention.cpp; the descriptor fields it is built from
// were checked by plugin::check_kv_cache (check_helpers.hpp), so the index arithmetic fits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

struct KvCacheLayout {
    int64_t n_kv_heads = 0;
    int64_t block_size = 0;
    int64_t head_dim = 0;
    size_t elem_bytes = 0;  // of the cache dtype

    // The layout of a checked descriptor's cache (f32, bf16 or f16).
    static KvCacheLayout of(int64_t n_kv_heads, int64_t block_size, int64_t head_dim,
                            pagoda_dtype_t cache_dtype) {
        return {n_kv_heads, block_size, head_dim, cache_dtype == PAGODA_DTYPE_F32 ? 4u : 2u};
    }

    // Element index of the row of `head` for token `offset` of physical block `block`.
    int64_t row(int64_t block, int64_t head, int64_t offset) const {
        return ((block * n_kv_heads + head) * block_size + offset) * head_dim;
    }
    template <typename Byte>
    Byte *row_ptr(Byte *cache, int64_t block, int64_t head, int64_t offset) const {
        return cache + row(block, head, offset) * int64_t(elem_bytes);
    }
};

}  // namespace pagoda::cpu
