/* Descriptor checks of RoPE, the paged-KV ops (KV_WRITE, PAGED_ATTENTION, ATTENTION_MERGE,
 * COPY/SWAP_BLOCKS) and the mixture-of-experts ops, plus reading an argument struct across ABI
 * minor versions. What depends on the data (slots, block tables, ids) is checked by the kernels. */
#include <math.h>
#include <string.h>

#include "ref_checks.h"

pagoda_status_t ref_read_args(const ref_backend_t *b, const char *what, const void *args,
                              void *out, size_t size, size_t min_size) {
    if (args == NULL)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: the argument struct is NULL", what);
    uint32_t declared = 0;
    memcpy(&declared, args, sizeof declared);
    if (declared < min_size)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: struct_size %u is too small (at least %zu)", what, (unsigned)declared,
                        min_size);
    /* A newer caller's struct is larger: the fields this plugin does not know must be zero, or
     * it would silently ignore something the caller asked for (ops.h). */
    const unsigned char *bytes = args;
    for (size_t i = size; i < declared; ++i)
        if (bytes[i] != 0)
            return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                            "%s: the descriptor sets fields this backend does not know "
                            "(struct_size %u > %zu, byte %zu is nonzero)",
                            what, (unsigned)declared, size, i);
    /* An older caller's struct is smaller: the fields it does not know read as zero. */
    memset(out, 0, size);
    memcpy(out, args, declared < size ? declared : size);
    return PAGODA_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* RoPE                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static pagoda_status_t positive_finite(const ref_backend_t *b, const char *op, const char *prefix,
                                       const char *field, float v) {
    if (isfinite(v) && v > 0.0f) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s%s = %g must be finite and positive", op,
                    prefix, field, (double)v);
}

pagoda_status_t ref_check_rope_rotation(const ref_backend_t *b, const char *op,
                                        const char *prefix, const pagoda_op_rope_t *a) {
    const int64_t layout = a->layout, scaling = a->scaling;
    if (layout != PAGODA_ROPE_HALF_SPLIT && layout != PAGODA_ROPE_INTERLEAVED)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED, "%s: %slayout = %lld is not a layout this backend knows",
                        op, prefix, (long long)layout);
    if (scaling != PAGODA_ROPE_SCALING_NONE && scaling != PAGODA_ROPE_SCALING_LINEAR &&
        scaling != PAGODA_ROPE_SCALING_LLAMA3)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                        "%s: %sscaling = %lld is not a scaling this backend knows", op, prefix,
                        (long long)scaling);
    if (a->head_dim <= 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %shead_dim = %lld must be positive",
                        op, prefix, (long long)a->head_dim);
    const int64_t rot_dim = a->rot_dim == 0 ? a->head_dim : a->rot_dim;
    if (rot_dim < 0 || rot_dim > a->head_dim || rot_dim % 2 != 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: %srot_dim = %lld must be even and in [2, head_dim = %lld]", op,
                        prefix, (long long)rot_dim, (long long)a->head_dim);
    REF_CHECK(positive_finite(b, op, prefix, "theta", a->theta));
    if (scaling != PAGODA_ROPE_SCALING_NONE)
        REF_CHECK(positive_finite(b, op, prefix, "factor", a->factor));
    if (scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        REF_CHECK(positive_finite(b, op, prefix, "low_freq_factor", a->low_freq_factor));
        REF_CHECK(positive_finite(b, op, prefix, "high_freq_factor", a->high_freq_factor));
        if (!(a->high_freq_factor > a->low_freq_factor))
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: %shigh_freq_factor = %g must be greater than low_freq_factor = %g",
                            op, prefix, (double)a->high_freq_factor, (double)a->low_freq_factor);
        if (a->original_max_position <= 0)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: %soriginal_max_position = %lld must be positive", op, prefix,
                            (long long)a->original_max_position);
    }
    return PAGODA_OK;
}

pagoda_status_t ref_check_rope(const ref_backend_t *b, const pagoda_op_rope_t *a) {
    const char *op = "rope";
    REF_CHECK(ref_check_rope_rotation(b, op, "", a));
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, op, "n_tokens", a->n_tokens));
    REF_CHECK(ref_check_positive(b, op, "n_heads", a->n_heads));
    int64_t heads = 0;
    if (__builtin_mul_overflow(a->n_heads, a->head_dim, &heads))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_heads · head_dim overflows", op);
    REF_CHECK(ref_check_stride(b, op, "token_stride", a->token_stride, heads));
    return ref_check_extent(b, op, "x", a->n_tokens, ref_packed_or(a->token_stride, heads), heads,
                            ref_act_bytes(a->act_dtype));
}

/* ------------------------------------------------------------------------------------------ */
/* The paged KV cache                                                                           */
/* ------------------------------------------------------------------------------------------ */

pagoda_status_t ref_check_kv_write(const ref_backend_t *b, const pagoda_op_kv_write_t *a) {
    const char *op = "kv_write";
    REF_CHECK(ref_check_kv_cache(b, op, a->layout, a->cache_dtype, a->n_kv_heads, a->head_dim,
                                 a->block_size, a->num_blocks));
    if (a->n_tokens < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_tokens %lld is negative", op,
                        (long long)a->n_tokens);
    const int64_t row = a->n_kv_heads * a->head_dim; /* bounded by ref_check_kv_cache */
    REF_CHECK(ref_check_token_stride(b, op, "k_token_stride", a->k_token_stride, row));
    REF_CHECK(ref_check_token_stride(b, op, "v_token_stride", a->v_token_stride, row));
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    if (a->n_tokens > 0) {
        const int64_t elem = ref_act_bytes(a->act_dtype);
        REF_CHECK(ref_check_extent(b, op, "k", a->n_tokens, ref_packed_or(a->k_token_stride, row),
                                   row, elem));
        REF_CHECK(ref_check_extent(b, op, "v", a->n_tokens, ref_packed_or(a->v_token_stride, row),
                                   row, elem));
    }
    if (a->k_rope == NULL) return PAGODA_OK;
    /* The fused rotation is a nested struct with its own struct_size, read the same way. */
    pagoda_op_rope_t rope;
    REF_CHECK(ref_read_args(b, "kv_write: k_rope", a->k_rope, &rope, sizeof rope,
                            offsetof(pagoda_op_rope_t, act_dtype)));
    if (rope.head_dim != a->head_dim)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: k_rope.head_dim = %lld must equal head_dim = %lld", op,
                        (long long)rope.head_dim, (long long)a->head_dim);
    return ref_check_rope_rotation(b, op, "k_rope.", &rope);
}

pagoda_status_t ref_check_paged_attention(const ref_backend_t *b,
                                          const pagoda_op_paged_attention_t *a) {
    const char *op = "paged_attention";
    REF_CHECK(ref_check_kv_cache(b, op, a->layout, a->cache_dtype, a->n_kv_heads, a->head_dim,
                                 a->block_size, a->num_blocks));
    const int32_t shards = a->kv_shards > 1 ? a->kv_shards : 1;
    if (a->n_seqs < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_seqs %lld is negative", op,
                        (long long)a->n_seqs);
    if (a->n_q_heads <= 0 || a->n_q_heads % a->n_kv_heads != 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: n_q_heads %lld is not a positive multiple of n_kv_heads %lld", op,
                        (long long)a->n_q_heads, (long long)a->n_kv_heads);
    if (a->max_blocks_per_seq < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: max_blocks_per_seq %lld is negative",
                        op, (long long)a->max_blocks_per_seq);
    if (a->kv_shards < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: kv_shards %d is negative", op,
                        (int)a->kv_shards);
    if (a->kv_shard < 0 || a->kv_shard >= shards)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: kv_shard %d is outside [0, %d)", op,
                        (int)a->kv_shard, (int)shards);
    int64_t capacity = 0;
    if (__builtin_mul_overflow(a->max_blocks_per_seq, a->block_size, &capacity) ||
        __builtin_mul_overflow(capacity, (int64_t)shards, &capacity))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: max_blocks_per_seq %lld is too large",
                        op, (long long)a->max_blocks_per_seq);
    if (a->max_context_len < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: max_context_len %lld is negative", op,
                        (long long)a->max_context_len);
    if (a->sliding_window < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: sliding_window %d is negative", op,
                        (int)a->sliding_window);
    if (!isfinite(a->scale))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: scale %g is not finite", op,
                        (double)a->scale);
    if (!(a->softcap >= 0.0f) || !isfinite(a->softcap))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: softcap = %g must be 0 (off) or positive and finite", op,
                        (double)a->softcap);
    int64_t row = 0;
    if (__builtin_mul_overflow(a->n_q_heads, a->head_dim, &row))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_q_heads × head_dim is too large", op);
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_token_stride(b, op, "q_token_stride", a->q_token_stride, row));
    return ref_check_token_stride(b, op, "out_token_stride", a->out_token_stride, row);
}

pagoda_status_t ref_check_attention_merge(const ref_backend_t *b,
                                          const pagoda_op_attention_merge_t *a) {
    const char *op = "attention_merge";
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, op, "n_parts", a->n_parts));
    REF_CHECK(ref_check_positive(b, op, "n_tokens", a->n_tokens));
    REF_CHECK(ref_check_positive(b, op, "n_heads", a->n_heads));
    REF_CHECK(ref_check_positive(b, op, "head_dim", a->head_dim));
    int64_t row = 0, rows = 0;
    if (__builtin_mul_overflow(a->n_heads, a->head_dim, &row) ||
        __builtin_mul_overflow(a->n_parts, a->n_tokens, &rows))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: the parts are too large", op);
    REF_CHECK(ref_check_token_stride(b, op, "out_token_stride", a->out_token_stride, row));
    const int64_t act = ref_act_bytes(a->act_dtype);
    REF_CHECK(ref_check_extent(b, op, "parts", rows, row, row, act));
    REF_CHECK(ref_check_extent(b, op, "lse", rows, a->n_heads, a->n_heads, 4));
    return ref_check_extent(b, op, "out", a->n_tokens, ref_packed_or(a->out_token_stride, row),
                            row, act);
}

static pagoda_status_t check_block_copy(const ref_backend_t *b, const char *op,
                                        const pagoda_op_copy_blocks_t *a) {
    if (a->src_num_blocks <= 0 || a->dst_num_blocks <= 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: src_num_blocks %lld and dst_num_blocks %lld must be positive", op,
                        (long long)a->src_num_blocks, (long long)a->dst_num_blocks);
    if (a->n_caches < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_caches %lld is negative", op,
                        (long long)a->n_caches);
    if (a->n_pairs < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_pairs %lld is negative", op,
                        (long long)a->n_pairs);
    if (a->block_bytes <= 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: block_bytes %lld must be positive", op,
                        (long long)a->block_bytes);
    return PAGODA_OK;
}

pagoda_status_t ref_check_copy_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a) {
    return check_block_copy(b, "copy_blocks", a);
}

pagoda_status_t ref_check_swap_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a) {
    const int64_t direction = a->direction;
    if (direction != PAGODA_SWAP_OUT && direction != PAGODA_SWAP_IN)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "swap_blocks: direction %lld is neither PAGODA_SWAP_OUT nor PAGODA_SWAP_IN",
                        (long long)direction);
    return check_block_copy(b, "swap_blocks", a);
}

/* ------------------------------------------------------------------------------------------ */
/* Mixture of experts                                                                           */
/* ------------------------------------------------------------------------------------------ */

pagoda_status_t ref_check_moe_route(const ref_backend_t *b, const pagoda_op_moe_route_t *a) {
    const char *op = "moe_route";
    if (a->routing != PAGODA_MOE_SOFTMAX_TOPK && a->routing != PAGODA_MOE_SOFTMAX_TOPK_NORM)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED, "%s: routing = %d is not a routing this backend knows",
                        op, (int)a->routing);
    REF_CHECK(ref_check_positive(b, op, "n_tokens", a->n_tokens));
    REF_CHECK(ref_check_positive(b, op, "n_experts", a->n_experts));
    REF_CHECK(ref_check_positive(b, op, "top_k", a->top_k));
    if (a->n_experts > REF_MOE_MAX_EXPERTS)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_experts = %lld is more than %d", op,
                        (long long)a->n_experts, REF_MOE_MAX_EXPERTS);
    if (a->top_k > a->n_experts)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: top_k = %lld is more than n_experts = %lld",
                        op, (long long)a->top_k, (long long)a->n_experts);
    if (a->top_k > REF_MOE_MAX_TOP_K)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: top_k = %lld is more than %d", op,
                        (long long)a->top_k, REF_MOE_MAX_TOP_K);
    REF_CHECK(ref_check_extent(b, op, "logits", a->n_tokens, a->n_experts, a->n_experts, 4));
    REF_CHECK(ref_check_extent(b, op, "expert_ids", a->n_tokens, a->top_k, a->top_k, 4));
    return ref_check_extent(b, op, "weights", a->n_tokens, a->top_k, a->top_k, 4);
}

pagoda_status_t ref_check_moe_matmul(const ref_backend_t *b, const pagoda_op_moe_matmul_t *a) {
    const char *op = "moe_matmul";
    REF_CHECK(ref_check_positive(b, op, "n_tokens", a->n_tokens));
    REF_CHECK(ref_check_positive(b, op, "top_k", a->top_k));
    REF_CHECK(ref_check_positive(b, op, "n_experts", a->n_experts));
    REF_CHECK(ref_check_positive(b, op, "n", a->n));
    REF_CHECK(ref_check_positive(b, op, "k", a->k));
    if (a->expert_offset < 0 || a->expert_offset > INT32_MAX)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: expert_offset = %lld is outside [0, 2147483647]", op,
                        (long long)a->expert_offset);
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->k));
    REF_CHECK(ref_check_stride(b, op, "ldw", a->ldw, a->k));
    REF_CHECK(ref_check_stride(b, op, "ldy", a->ldy, a->n));
    REF_CHECK(ref_check_weight_dtype(b, op, "x_dtype", a->x_dtype));
    REF_CHECK(ref_check_row_weight_dtype(b, op, "w_dtype", a->w_dtype, a->k,
                                         ref_packed_or(a->ldw, a->k)));
    REF_CHECK(ref_check_weight_dtype(b, op, "y_dtype", a->y_dtype));
    int64_t slots = 0;
    if (__builtin_mul_overflow(a->n_tokens, a->top_k, &slots))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_tokens × top_k is too large", op);
    const int64_t x_rows = a->x_per_slot != 0 ? slots : a->n_tokens;
    const int64_t y_rows = a->weights != NULL ? a->n_tokens : slots;
    REF_CHECK(ref_check_extent(b, op, "x", x_rows, ref_packed_or(a->ldx, a->k), a->k,
                               ref_block_bytes(a->x_dtype)));
    REF_CHECK(ref_check_extent(b, op, "experts", 1, a->n_experts, a->n_experts,
                               (int64_t)sizeof(void *)));
    REF_CHECK(ref_check_weight_extent(b, op, "an expert's matrix", a->w_dtype, a->n,
                                      ref_packed_or(a->ldw, a->k), a->k));
    REF_CHECK(ref_check_extent(b, op, "expert_ids", 1, slots, slots, 4));
    REF_CHECK(ref_check_extent(b, op, "weights", 1, slots, slots, 4));
    return ref_check_extent(b, op, "y", y_rows, ref_packed_or(a->ldy, a->n), a->n,
                            ref_block_bytes(a->y_dtype));
}
