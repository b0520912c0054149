// KV_WRITE: stores each new token's keys and values (all KV heads, of act_dtype) into its slot of
// the paged caches, converting to the cache dtype. This is vLLM's fused "reshape and cache" step
// (thesis §5.5.1, optimisation 1): a token's heads go to rows that lie far apart in the cache.
// With k_rope the keys are rotated on the way (rope_rotation.hpp), bit for bit as ROPE would
// have rotated them, without touching `k`; half-precision keys are widened first and the
// rotated head is rounded once, to the cache's type.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "check_helpers.hpp"
#include "half.hpp"
#include "kernels.hpp"
#include "kv_layout.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"
#include "rope_rotation.hpp"
#include "scratch.hpp"

namespace pagoda::cpu {

namespace {

// Stores one head's f32 row into the cache's dtype.
void store_f32_row(const float *src, void *dst, pagoda_dtype_t dtype, int64_t n) {
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

// Stores one head's row of activations (`src_dtype`) into the cache's dtype. A half row going
// to a cache of its own type is copied: widening and rounding back would give the same bits.
void store_row(const void *src, pagoda_dtype_t src_dtype, void *dst, pagoda_dtype_t dtype,
               int64_t n) {
    if (src_dtype == PAGODA_DTYPE_F32)
        return store_f32_row(static_cast<const float *>(src), dst, dtype, n);
    if (src_dtype == dtype) {
        std::memcpy(dst, src, size_t(n) * sizeof(uint16_t));
        return;
    }
    for (int64_t i = 0; i < n; ++i) store_value(dst, dtype, i, load_weight(src, src_dtype, i));
}

// The fused rotation of one launch: the rope descriptor and its frequency table.
struct KeyRotation {
    pagoda_op_rope_t rope{};
    std::vector<double> inv_freq;
    int64_t pairs = 0;
};

// A token's write. `scratch` (2 · pairs + head_dim floats, the caller's alone) holds the
// token's cos/sin and one rotated head; unused without a rotation.
struct TokenWriter {
    const pagoda_op_kv_write_t &a;
    const KeyRotation *rotation;  // or nullptr
    KvCacheLayout layout;
    pagoda_dtype_t act;            // of k and v: F32, BF16 or F16
    int64_t k_stride, v_stride;    // elements

    void operator()(int64_t t, float *scratch) const {
        const int64_t slot = a.slot_mapping[t];
        if (slot < 0) return;  // padding
        const int64_t block = slot / a.block_size, offset = slot % a.block_size;
        const int64_t act_bytes = act == PAGODA_DTYPE_F32 ? 4 : 2;
        const auto *k = static_cast<const unsigned char *>(a.k) + t * k_stride * act_bytes;
        const auto *v = static_cast<const unsigned char *>(a.v) + t * v_stride * act_bytes;
        const int64_t head_bytes = a.head_dim * act_bytes;
        auto *k_cache = static_cast<unsigned char *>(a.k_cache);
        auto *v_cache = static_cast<unsigned char *>(a.v_cache);
        float *cos_t = scratch, *sin_t = nullptr, *head = nullptr;
        if (rotation != nullptr) {
            sin_t = cos_t + rotation->pairs;
            head = sin_t + rotation->pairs;
            rope_angles(rotation->rope.positions[t], rotation->inv_freq.data(), rotation->pairs,
                        cos_t, sin_t);
        }
        for (int64_t h = 0; h < a.n_kv_heads; ++h) {
            const void *k_head = k + h * head_bytes;
            pagoda_dtype_t k_dtype = act;
            if (rotation != nullptr) {
                const int64_t rot_dim = 2 * rotation->pairs;
                if (act == PAGODA_DTYPE_F32) {
                    // The rotated pairs, then the elements past rot_dim as they are.
                    const auto *src = static_cast<const float *>(k_head);
                    rope_rotate_head(rotation->rope.layout, rotation->pairs, src, head, 0,
                                     rotation->pairs, cos_t, sin_t);
                    std::copy(src + rot_dim, src + a.head_dim, head + rot_dim);
                } else {
                    // Widened whole, then rotated in place: rounded only once, on the store.
                    for (int64_t i = 0; i < a.head_dim; ++i) head[i] = load_weight(k_head, act, i);
                    rope_rotate_head(rotation->rope.layout, rotation->pairs, head, head, 0,
                                     rotation->pairs, cos_t, sin_t);
                }
                k_head = head;
                k_dtype = PAGODA_DTYPE_F32;
            }
            store_row(k_head, k_dtype, layout.row_ptr(k_cache, block, h, offset), a.cache_dtype,
                      a.head_dim);
            store_row(v + h * head_bytes, act, layout.row_ptr(v_cache, block, h, offset),
                      a.cache_dtype, a.head_dim);
        }
    }
};

// The launch-time checks of k_rope (positions present; freq_factors finite and positive) and
// its frequency table.
pagoda_status_t prepare_rotation(CpuBackend &cpu, const pagoda_op_kv_write_t &a,
                                 KeyRotation &rotation) {
    PAGODA_PLUGIN_CHECK(
        plugin::read_op_args(cpu, plugin::kKvWriteRopeName, a.k_rope, rotation.rope));
    PAGODA_PLUGIN_CHECK(
        plugin::check_pointer(cpu, "kv_write", "k_rope.positions", rotation.rope.positions));
    PAGODA_PLUGIN_CHECK(
        rope_inverse_frequencies(cpu, "kv_write", "k_rope.", rotation.rope, rotation.inv_freq));
    rotation.pairs = rope_rot_dim(rotation.rope) / 2;
    return PAGODA_OK;
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
    KeyRotation rotation;
    if (a.k_rope != nullptr) PAGODA_PLUGIN_CHECK(prepare_rotation(cpu, a, rotation));

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

    const int64_t row = a.n_kv_heads * a.head_dim;
    const TokenWriter write{a, a.k_rope != nullptr ? &rotation : nullptr,
                            KvCacheLayout::of(a.n_kv_heads, a.block_size, a.head_dim,
                                              a.cache_dtype),
                            plugin::act_dtype_of(a.act_dtype),
                            plugin::packed_or(a.k_token_stride, row),
                            plugin::packed_or(a.v_token_stride, row)};

    if (a.k_rope == nullptr) {
        // A token is a few KiB at most; give each chunk enough tokens to be worth a thread.
        const int64_t grain = std::max<int64_t>(1, 16384 / row);
        cpu.pool().parallel_for(a.n_tokens, grain, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) write(t, nullptr);
        });
        return PAGODA_OK;
    }

    // With the rotation each token also costs rot_dim/2 double sin/cos pairs. The tokens go in
    // a few chunks per thread, each with its own scratch in the launching thread's reusable
    // area (scratch.hpp).
    const int64_t per_chunk = 2 * rotation.pairs + a.head_dim;
    const int64_t n_chunks = std::min<int64_t>(a.n_tokens, 4 * int64_t(cpu.threads()));
    float *scratch = nullptr;
    try {
        scratch = thread_scratch<struct KvWriteRopeScratch>(size_t(n_chunks * per_chunk));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "kv_write: no memory for " +
                                                      std::to_string(n_chunks) +
                                                      " rotation scratch areas of " +
                                                      std::to_string(per_chunk) + " floats");
    }
    cpu.pool().parallel_for(n_chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const int64_t first = c * a.n_tokens / n_chunks;
            const int64_t last = (c + 1) * a.n_tokens / n_chunks;
            for (int64_t t = first; t < last; ++t) write(t, scratch + c * per_chunk);
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
