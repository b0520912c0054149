// Descriptor checks of ATTENTION_MERGE, which combines the per-shard results of PAGED_ATTENTION
// (cache parallelism, ABI 1.2): shapes, the activations' type and the extents of its arrays.
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

pagoda_status_t check_attention_merge(const Reporter &r, const pagoda_op_attention_merge_t &a) {
    constexpr const char *op = "attention_merge";
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_parts", a.n_parts));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_tokens", a.n_tokens));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_heads", a.n_heads));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "head_dim", a.head_dim));
    int64_t row = 0, rows = 0;
    if (__builtin_mul_overflow(a.n_heads, a.head_dim, &row) ||
        __builtin_mul_overflow(a.n_parts, a.n_tokens, &rows))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(op) + ": n_parts × n_tokens × n_heads × head_dim is too large");
    PAGODA_PLUGIN_CHECK(check_token_stride(r, op, "out_token_stride", a.out_token_stride, row));
    const auto act_bytes = int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)));
    // parts is packed [n_parts · n_tokens] rows of a token's heads; lse the same rows of n_heads.
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "parts", rows, row, row, act_bytes));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "lse", rows, a.n_heads, a.n_heads, 4));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "out", a.n_tokens, packed_or(a.out_token_stride, row),
                                     row, act_bytes));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
