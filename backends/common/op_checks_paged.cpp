// Descriptor checks of the paged-KV ops, KV_WRITE and PAGED_ATTENTION: the cache's geometry
// (check_kv_cache), the activations' type (act_dtype) and the shapes of the token rows. What
// depends on the data (slot ids, query offsets, context lengths, block tables) is checked by
// each backend when it runs the op.
#include <algorithm>

#include "check_helpers.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

pagoda_status_t check_kv_write(const Reporter &r, const pagoda_op_kv_write_t &a) {
    constexpr const char *op = "kv_write";
    PAGODA_PLUGIN_CHECK(check_kv_cache(r, op, a.layout, a.cache_dtype, a.n_kv_heads, a.head_dim,
                                       a.block_size, a.num_blocks));
    // Zero tokens is a valid (empty) launch.
    if (a.n_tokens < 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(op) + ": n_tokens " + std::to_string(a.n_tokens) +
                          " is negative");
    const int64_t row = a.n_kv_heads * a.head_dim;  // cannot overflow: check_kv_cache bounds it
    PAGODA_PLUGIN_CHECK(check_token_stride(r, op, "k_token_stride", a.k_token_stride, row));
    PAGODA_PLUGIN_CHECK(check_token_stride(r, op, "v_token_stride", a.v_token_stride, row));
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    if (a.n_tokens > 0) {
        const auto elem = int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)));
        PAGODA_PLUGIN_CHECK(check_extent(r, op, "k", a.n_tokens,
                                         packed_or(a.k_token_stride, row), row, elem));
        PAGODA_PLUGIN_CHECK(check_extent(r, op, "v", a.n_tokens,
                                         packed_or(a.v_token_stride, row), row, elem));
    }
    if (a.k_rope == nullptr) return PAGODA_OK;
    // The fused rotation: ROPE's rules for the fields it keeps (its positions are checked at
    // launch, where they are needed only when there are tokens). Its act_dtype is not one of
    // them: the keys are this op's `k`, of this op's act_dtype, rotated in f32.
    pagoda_op_rope_t rope;
    PAGODA_PLUGIN_CHECK(read_op_args(r, kKvWriteRopeName, a.k_rope, rope));
    if (rope.head_dim != a.head_dim)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(op) + ": k_rope.head_dim = " + std::to_string(rope.head_dim) +
                          " must equal head_dim = " + std::to_string(a.head_dim));
    return check_rope_rotation(r, op, "k_rope.", rope);
}

pagoda_status_t check_paged_attention(const Reporter &r, const pagoda_op_paged_attention_t &a) {
    constexpr const char *op = "paged_attention";
    PAGODA_PLUGIN_CHECK(check_kv_cache(r, op, a.layout, a.cache_dtype, a.n_kv_heads, a.head_dim,
                                       a.block_size, a.num_blocks));
    auto invalid = [&](const std::string &what) {
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + what);
    };
    if (a.n_seqs < 0) return invalid("n_seqs " + std::to_string(a.n_seqs) + " is negative");
    // Grouped-query attention: each KV head serves n_q_heads / n_kv_heads query heads.
    if (a.n_q_heads <= 0 || a.n_q_heads % a.n_kv_heads != 0)
        return invalid("n_q_heads " + std::to_string(a.n_q_heads) +
                       " is not a positive multiple of n_kv_heads " + std::to_string(a.n_kv_heads));
    if (a.max_blocks_per_seq < 0)
        return invalid("max_blocks_per_seq " + std::to_string(a.max_blocks_per_seq) +
                       " is negative");
    // Cache parallelism (ABI 1.2): 0 and 1 both mean the whole sequence is in this cache.
    if (a.kv_shards < 0)
        return invalid("kv_shards " + std::to_string(a.kv_shards) + " is negative");
    if (a.kv_shard < 0 || a.kv_shard >= std::max<int32_t>(a.kv_shards, 1))
        return invalid("kv_shard " + std::to_string(a.kv_shard) + " is outside [0, kv_shards " +
                       std::to_string(std::max<int32_t>(a.kv_shards, 1)) + ")");
    // A sequence's capacity, max_blocks_per_seq × block_size × kv_shards, is compared with
    // context lengths.
    int64_t capacity = 0;
    if (__builtin_mul_overflow(a.max_blocks_per_seq, a.block_size, &capacity) ||
        __builtin_mul_overflow(capacity, std::max<int32_t>(a.kv_shards, 1), &capacity))
        return invalid("max_blocks_per_seq " + std::to_string(a.max_blocks_per_seq) +
                       " is too large");
    if (a.max_context_len < 0)
        return invalid("max_context_len " + std::to_string(a.max_context_len) + " is negative");
    if (a.sliding_window < 0)
        return invalid("sliding_window " + std::to_string(a.sliding_window) + " is negative");
    if (!std::isfinite(a.scale))
        return invalid("scale " + std::to_string(a.scale) + " is not finite");
    // ABI 1.8: 0 turns soft-capping off; a bound must be positive and finite, as it divides
    // the scores.
    if (!(a.softcap >= 0.0f) || !std::isfinite(a.softcap))
        return invalid("softcap = " + float_text(a.softcap) +
                       " must be 0 (off) or positive and finite");
    int64_t row = 0;
    if (__builtin_mul_overflow(a.n_q_heads, a.head_dim, &row))
        return invalid("n_q_heads × head_dim is too large");
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_token_stride(r, op, "q_token_stride", a.q_token_stride, row));
    return check_token_stride(r, op, "out_token_stride", a.out_token_stride, row);
}

}  // namespace pagoda::plugin
