// The paged KV cache as the CPU kernels address it: PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN, that is
// [num_blocks][n_kv_heads][block_size][head_dim], so one head's tokens in a block are contiguous
// rows. Shared by kv_write.cpp and paged_attention.cpp, which check the same shape fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "cpu_backend.hpp"
#include "dtypes.hpp"
#include "names.hpp"
#include "pagoda/ops.h"

namespace pagoda::cpu {

inline constexpr int64_t kMaxBlockSize = 128;  // ops.h: "Tokens per block (1–128)"

struct KvCacheLayout {
    int64_t n_kv_heads = 0;
    int64_t block_size = 0;
    int64_t head_dim = 0;
    size_t elem_bytes = 0;  // of the cache dtype

    // Element index of the row of `head` for token `offset` of physical block `block`.
    int64_t row(int64_t block, int64_t head, int64_t offset) const {
        return ((block * n_kv_heads + head) * block_size + offset) * head_dim;
    }
    template <typename Byte>
    Byte *row_ptr(Byte *cache, int64_t block, int64_t head, int64_t offset) const {
        return cache + row(block, head, offset) * int64_t(elem_bytes);
    }
};

// The value stored in an enum field. A C caller may store any int there, and loading a value
// outside the enumerators' range through the C++ enum type is undefined behaviour.
template <typename E>
int64_t raw_enum(const E &field) {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return int64_t(v);
}

// Checks the fields that describe a cache and returns its layout in `out`. `op` prefixes messages.
inline pagoda_status_t check_kv_cache(CpuBackend &cpu, const char *op,
                                      const pagoda_kv_layout_t &layout_field,
                                      const pagoda_dtype_t &dtype_field, int64_t n_kv_heads,
                                      int64_t head_dim, int64_t block_size, int64_t num_blocks,
                                      KvCacheLayout &out) {
    const std::string p = std::string(op) + ": ";
    const int64_t layout = raw_enum(layout_field), dtype = raw_enum(dtype_field);
    if (layout != PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)
        return cpu.fail(PAGODA_ERR_UNSUPPORTED,
                        p + "layout " + std::to_string(layout) +
                            " is not supported (only PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)");
    if (dtype != PAGODA_DTYPE_F32 && dtype != PAGODA_DTYPE_BF16 && dtype != PAGODA_DTYPE_F16) {
        const bool known = dtype >= PAGODA_DTYPE_INVALID && dtype <= PAGODA_DTYPE_U8;
        return cpu.fail(
            PAGODA_ERR_UNSUPPORTED,
            p + "cache_dtype " +
                (known ? plugin::dtype_name(pagoda_dtype_t(dtype)) : std::to_string(dtype)) +
                " is not supported (f32, bf16 or f16)");
    }
    if (n_kv_heads <= 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        p + "n_kv_heads " + std::to_string(n_kv_heads) + " must be positive");
    if (head_dim <= 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        p + "head_dim " + std::to_string(head_dim) + " must be positive");
    if (block_size < 1 || block_size > kMaxBlockSize)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        p + "block_size " + std::to_string(block_size) + " is outside 1..128");
    if (num_blocks < 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        p + "num_blocks " + std::to_string(num_blocks) + " is negative");
    // Byte offsets into the cache must not overflow.
    const size_t elem = plugin::dtype_size(pagoda_dtype_t(dtype));  // checked above
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n_kv_heads, head_dim, &bytes) ||
        __builtin_mul_overflow(bytes, block_size * int64_t(elem), &bytes) ||
        __builtin_mul_overflow(bytes, num_blocks, &bytes))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        p + "the cache of num_blocks " + std::to_string(num_blocks) +
                            " × n_kv_heads × block_size × head_dim is too large to address");
    out = KvCacheLayout{n_kv_heads, block_size, head_dim, elem};
    return PAGODA_OK;
}

// Checks an optional token stride (0 = packed) against the row length it must cover.
inline pagoda_status_t check_token_stride(CpuBackend &cpu, const char *op, const char *field,
                                          int64_t stride, int64_t row) {
    if (stride == 0 || stride >= row) return PAGODA_OK;
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string(op) + ": " + field + " " + std::to_string(stride) +
                        " is smaller than a token's " + std::to_string(row) + " elements");
}

}  // namespace pagoda::cpu
