// KV_WRITE: stores each new token's f32 keys and values (all KV heads) into its slot of the paged
// caches, converting to the cache dtype. This is vLLM's fused "reshape and cache" step (thesis
// §5.5.1, optimisation 1): a token's heads go to rows that lie far apart in the cache.
#include <algorithm>
#include <cstring>
#include <string>

#include "half.hpp"
#include "kernels.hpp"
#include "kv_layout.hpp"

namespace pagoda::cpu {

namespace {

// Stores one head's f32 row into the cache's dtype.
void store_row(const float *src, void *dst, pagoda_dtype_t dtype, int64_t n) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: {
            auto *d = static_cast<uint16_t *>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
            break;
        }
        case PAGODA_DTYPE_F16: {
            auto *d = static_cast<uint16_t *>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
            break;
        }
        default: std::memcpy(dst, src, size_t(n) * sizeof(float)); break;
    }
}

}  // namespace

pagoda_status_t run_kv_write(CpuBackend &cpu, const pagoda_op_kv_write_t &a) {
    if (a.n_tokens == 0) return PAGODA_OK;
    const char *null_field = a.k == nullptr              ? "k"
                             : a.v == nullptr            ? "v"
                             : a.k_cache == nullptr      ? "k_cache"
                             : a.v_cache == nullptr      ? "v_cache"
                             : a.slot_mapping == nullptr ? "slot_mapping"
                                                         : nullptr;
    if (null_field != nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string("kv_write: ") + null_field +
                                                         " is NULL with n_tokens " +
                                                         std::to_string(a.n_tokens));

    // Every slot is checked before anything is written, so a failed launch leaves the caches as
    // they were.
    const int64_t n_slots = a.num_blocks * a.block_size;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const int64_t slot = a.slot_mapping[t];
        if (slot >= n_slots)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "kv_write: slot_mapping[" + std::to_string(t) +
                                "] = " + std::to_string(slot) + " is past the cache's " +
                                std::to_string(n_slots) + " slots (num_blocks " +
                                std::to_string(a.num_blocks) + " × block_size " +
                                std::to_string(a.block_size) + ")");
    }

    const auto layout = KvCacheLayout::of(a.n_kv_heads, a.block_size, a.head_dim, a.cache_dtype);
    const int64_t row = a.n_kv_heads * a.head_dim;
    const int64_t k_stride = a.k_token_stride ? a.k_token_stride : row;
    const int64_t v_stride = a.v_token_stride ? a.v_token_stride : row;
    auto *k_cache = static_cast<unsigned char *>(a.k_cache);
    auto *v_cache = static_cast<unsigned char *>(a.v_cache);
    const auto *k = static_cast<const float *>(a.k);
    const auto *v = static_cast<const float *>(a.v);

    // A token is a few KiB at most; give each chunk enough tokens to be worth a thread.
    const int64_t grain = std::max<int64_t>(1, 16384 / row);
    cpu.pool().parallel_for(a.n_tokens, grain, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int64_t slot = a.slot_mapping[t];
            if (slot < 0) continue;  // padding
            const int64_t block = slot / a.block_size, offset = slot % a.block_size;
            for (int64_t h = 0; h < a.n_kv_heads; ++h) {
                store_row(k + t * k_stride + h * a.head_dim,
                          layout.row_ptr(k_cache, block, h, offset), a.cache_dtype, a.head_dim);
                store_row(v + t * v_stride + h * a.head_dim,
                          layout.row_ptr(v_cache, block, h, offset), a.cache_dtype, a.head_dim);
            }
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
