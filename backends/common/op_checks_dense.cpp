// Descriptor checks of the dense row ops: EMBEDDING, RMSNORM, SILU_MUL, ADD, ARGMAX, SOFTMAX,
// SOFTCAP. Activations are F32, BF16 or F16 as each op's act_dtype (EMBEDDING's out_dtype,
// SOFTCAP's dtype) says, 0 meaning F32; extents are checked in the activation type's element
// size.
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

pagoda_status_t check_embedding(const Reporter &r, const pagoda_op_embedding_t &a) {
    constexpr const char *op = "embedding";
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "vocab_size", a.vocab_size));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "dim", a.dim));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_tokens", a.n_tokens));
    PAGODA_PLUGIN_CHECK(
        check_row_weight_dtype(r, op, "table_dtype", raw_enum(a.table_dtype), a.dim, a.dim));
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "out_dtype", raw_enum(a.out_dtype)));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldo", a.ldo, a.dim));
    // ABI 1.8; 0 means 1. A non-finite factor would turn every row into inf or NaN.
    PAGODA_PLUGIN_CHECK(check_finite(r, op, "scale", a.scale));
    PAGODA_PLUGIN_CHECK(
        check_weight_extent(r, op, "table", a.table_dtype, a.vocab_size, a.dim, a.dim));
    const auto out_bytes = int64_t(formats::dtype_size(act_dtype_of(a.out_dtype)));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "out", a.n_tokens, packed_or(a.ldo, a.dim), a.dim, out_bytes));
    return PAGODA_OK;
}

pagoda_status_t check_rmsnorm(const Reporter &r, const pagoda_op_rmsnorm_t &a) {
    constexpr const char *op = "rmsnorm";
    PAGODA_PLUGIN_CHECK(check_weight_dtype(r, op, "weight_dtype", raw_enum(a.weight_dtype)));
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "rows", a.rows));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "dim", a.dim));
    // eps goes under a square root beside a mean square: negative or non-finite, it turns
    // valid rows into NaN.
    if (!(a.eps >= 0.0f) || !std::isfinite(a.eps))
        return r.fail(
            PAGODA_ERR_INVALID_ARGUMENT,
            std::string(op) + ": eps = " + float_text(a.eps) + " must be finite and not negative");
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldx", a.ldx, a.dim));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ld_residual", a.ld_residual, a.dim));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldo", a.ldo, a.dim));
    const auto act_bytes = int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "x", a.rows, packed_or(a.ldx, a.dim), a.dim, act_bytes));
    // The residual stream stays f32 whatever act_dtype is (ops.h).
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "residual", a.rows, packed_or(a.ld_residual, a.dim), a.dim, 4));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "out", a.rows, packed_or(a.ldo, a.dim), a.dim, act_bytes));
    return PAGODA_OK;
}

pagoda_status_t check_silu_mul(const Reporter &r, const pagoda_op_silu_mul_t &a) {
    constexpr const char *op = "silu_mul";
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    // ABI 1.8. A later ABI may add activations: one this backend does not know is unsupported
    // here, not invalid.
    if (a.activation != PAGODA_GLU_SILU && a.activation != PAGODA_GLU_GELU_TANH)
        return r.fail(PAGODA_ERR_UNSUPPORTED,
                      std::string(op) + ": activation = " + std::to_string(a.activation) +
                          " is not an activation this backend knows");
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "rows", a.rows));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "dim", a.dim));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ld_in", a.ld_in, a.dim));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldo", a.ldo, a.dim));
    const auto act_bytes = int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)));
    // gate and up share ld_in, so one extent covers both.
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "gate", a.rows, packed_or(a.ld_in, a.dim), a.dim, act_bytes));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "out", a.rows, packed_or(a.ldo, a.dim), a.dim, act_bytes));
    return PAGODA_OK;
}

pagoda_status_t check_add(const Reporter &r, const pagoda_op_add_t &a) {
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, "add", "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, "add", "n", a.n));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, "add", "a", 1, a.n, a.n, int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)))));
    return PAGODA_OK;
}

pagoda_status_t check_argmax(const Reporter &r, const pagoda_op_argmax_t &a) {
    constexpr const char *op = "argmax";
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "rows", a.rows));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "cols", a.cols));
    if (a.cols > INT32_MAX)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) +
                                                       ": cols = " + std::to_string(a.cols) +
                                                       " does not fit the int32 indices of out");
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldx", a.ldx, a.cols));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "x", a.rows, packed_or(a.ldx, a.cols), a.cols,
                                     int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)))));
    return PAGODA_OK;
}

pagoda_status_t check_softmax(const Reporter &r, const pagoda_op_softmax_t &a) {
    constexpr const char *op = "softmax";
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "rows", a.rows));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "cols", a.cols));
    PAGODA_PLUGIN_CHECK(check_finite(r, op, "scale", a.scale));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldx", a.ldx, a.cols));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldo", a.ldo, a.cols));
    const auto act_bytes = int64_t(formats::dtype_size(act_dtype_of(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "x", a.rows, packed_or(a.ldx, a.cols), a.cols, act_bytes));
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "out", a.rows, packed_or(a.ldo, a.cols), a.cols, act_bytes));
    return PAGODA_OK;
}

pagoda_status_t check_softcap(const Reporter &r, const pagoda_op_softcap_t &a) {
    constexpr const char *op = "softcap";
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, op, "dtype", raw_enum(a.dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n", a.n));
    // cap divides x: 0 has no meaning here (unlike attention's "off"), and a negative, NaN or
    // infinite bound gives NaN or flips signs.
    if (!(a.cap > 0.0f) || !std::isfinite(a.cap))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": cap = " +
                                                       float_text(a.cap) +
                                                       " must be positive and finite");
    PAGODA_PLUGIN_CHECK(
        check_extent(r, op, "x", 1, a.n, a.n, int64_t(formats::dtype_size(act_dtype_of(a.dtype)))));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
