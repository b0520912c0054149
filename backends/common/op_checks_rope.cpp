// The ROPE descriptor check: pairing layout, scaling kind and the scaling's parameters
// (Meta's llama3 scaling blends two frequency bands and needs them ordered). KV_WRITE's fused
// key rotation (its k_rope) is checked by the same rules, minus the fields it ignores (its
// act_dtype among them: KV_WRITE's own act_dtype names the keys' type).
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

namespace {

constexpr const char *kOp = "rope";

}  // namespace

pagoda_status_t check_rope_rotation(const Reporter &r, const char *op, const char *field_prefix,
                                    const pagoda_op_rope_t &a) {
    const std::string p = std::string(op) + ": " + field_prefix;
    auto invalid = [&](const std::string &what) {
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, p + what);
    };
    auto positive_finite = [&](const char *field, float v) {
        if (std::isfinite(v) && v > 0.0f) return PAGODA_OK;
        return invalid(std::string(field) + " = " + float_text(v) +
                       " must be finite and positive");
    };
    const int64_t layout = raw_enum(a.layout), scaling = raw_enum(a.scaling);
    if (layout != PAGODA_ROPE_HALF_SPLIT && layout != PAGODA_ROPE_INTERLEAVED)
        return r.fail(PAGODA_ERR_UNSUPPORTED, p + "layout = " + std::to_string(layout) +
                                                  " is not a layout this backend knows");
    if (scaling != PAGODA_ROPE_SCALING_NONE && scaling != PAGODA_ROPE_SCALING_LINEAR &&
        scaling != PAGODA_ROPE_SCALING_LLAMA3)
        return r.fail(PAGODA_ERR_UNSUPPORTED, p + "scaling = " + std::to_string(scaling) +
                                                  " is not a scaling this backend knows");
    if (a.head_dim <= 0)
        return invalid("head_dim = " + std::to_string(a.head_dim) + " must be positive");
    const int64_t rot_dim = a.rot_dim == 0 ? a.head_dim : a.rot_dim;
    if (rot_dim < 0 || rot_dim > a.head_dim || rot_dim % 2 != 0)
        return invalid("rot_dim = " + std::to_string(rot_dim) +
                       " must be even and in [2, head_dim = " + std::to_string(a.head_dim) +
                       "] (0 means head_dim)");
    PAGODA_PLUGIN_CHECK(positive_finite("theta", a.theta));
    if (scaling != PAGODA_ROPE_SCALING_NONE) PAGODA_PLUGIN_CHECK(positive_finite("factor", a.factor));
    if (scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        PAGODA_PLUGIN_CHECK(positive_finite("low_freq_factor", a.low_freq_factor));
        PAGODA_PLUGIN_CHECK(positive_finite("high_freq_factor", a.high_freq_factor));
        // The blend divides by their difference, and the bands need high > low.
        if (!(a.high_freq_factor > a.low_freq_factor))
            return invalid("high_freq_factor = " + float_text(a.high_freq_factor) +
                           " must be greater than low_freq_factor = " +
                           float_text(a.low_freq_factor));
        if (a.original_max_position <= 0)
            return invalid("original_max_position = " + std::to_string(a.original_max_position) +
                           " must be positive");
    }
    return PAGODA_OK;
}

pagoda_status_t check_rope(const Reporter &r, const pagoda_op_rope_t &a) {
    PAGODA_PLUGIN_CHECK(check_rope_rotation(r, kOp, "", a));
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, kOp, "act_dtype", raw_enum(a.act_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "n_tokens", a.n_tokens));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "n_heads", a.n_heads));
    int64_t heads_len = 0;
    if (__builtin_mul_overflow(a.n_heads, a.head_dim, &heads_len))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(kOp) + ": n_heads · head_dim overflows");
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "token_stride", a.token_stride, heads_len));
    return check_extent(r, kOp, "x", a.n_tokens, packed_or(a.token_stride, heads_len), heads_len,
                        int64_t(formats::dtype_size(act_dtype_of(a.act_dtype))));
}

}  // namespace pagoda::plugin
