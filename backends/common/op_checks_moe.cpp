// Descriptor checks of the mixture-of-experts ops (ABI 1.8): MOE_ROUTE and MOE_MATMUL. The
// pointers may be NULL here (a supports query); the expert ids and the experts' matrices are
// data, which each backend checks when it runs the op.
#include <climits>

#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

namespace {

pagoda_status_t invalid(const Reporter &r, const char *op, const std::string &what) {
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + what);
}

}  // namespace

std::string moe_nan_logit_text(int64_t row, int64_t column) {
    return "logits[" + std::to_string(row) + ", " + std::to_string(column) + "] is NaN";
}

std::string moe_negative_id_text(int64_t index, int64_t id) {
    return "expert_ids[" + std::to_string(index) + "] = " + std::to_string(id) +
           " is negative (expert ids are global, from 0)";
}

std::string moe_null_expert_text(int64_t expert, int64_t slot) {
    return "experts[" + std::to_string(expert) + "] is NULL, but expert_ids[" +
           std::to_string(slot) + "] picks it";
}

pagoda_status_t check_moe_route(const Reporter &r, const pagoda_op_moe_route_t &a) {
    constexpr const char *op = "moe_route";
    // A later ABI may add routings: one this backend does not know is unsupported, not invalid.
    if (a.routing != PAGODA_MOE_SOFTMAX_TOPK && a.routing != PAGODA_MOE_SOFTMAX_TOPK_NORM)
        return r.fail(PAGODA_ERR_UNSUPPORTED, std::string(op) + ": routing = " +
                                                  std::to_string(a.routing) +
                                                  " is not a routing this backend knows");
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_tokens", a.n_tokens));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_experts", a.n_experts));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "top_k", a.top_k));
    // ops.h's bounds, which let a kernel hold a token's logits and its picks on chip.
    if (a.n_experts > kMoeMaxExperts)
        return invalid(r, op, "n_experts = " + std::to_string(a.n_experts) + " is more than " +
                                  std::to_string(kMoeMaxExperts));
    if (a.top_k > a.n_experts)
        return invalid(r, op, "top_k = " + std::to_string(a.top_k) + " is more than n_experts = " +
                                  std::to_string(a.n_experts));
    if (a.top_k > kMoeMaxTopK)
        return invalid(r, op, "top_k = " + std::to_string(a.top_k) + " is more than " +
                                  std::to_string(kMoeMaxTopK));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "logits", a.n_tokens, a.n_experts, a.n_experts, 4));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "expert_ids", a.n_tokens, a.top_k, a.top_k, 4));
    return check_extent(r, op, "weights", a.n_tokens, a.top_k, a.top_k, 4);
}

pagoda_status_t check_moe_matmul(const Reporter &r, const pagoda_op_moe_matmul_t &a) {
    constexpr const char *op = "moe_matmul";
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_tokens", a.n_tokens));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "top_k", a.top_k));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n_experts", a.n_experts));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "n", a.n));
    PAGODA_PLUGIN_CHECK(check_positive(r, op, "k", a.k));
    // Expert ids are int32: an offset past the largest one would name no expert, and keeping it
    // there lets kernels subtract it from an id without overflow.
    if (a.expert_offset < 0 || a.expert_offset > INT32_MAX)
        return invalid(r, op, "expert_offset = " + std::to_string(a.expert_offset) +
                                  " is outside [0, 2147483647] (expert ids are int32)");
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldx", a.ldx, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldw", a.ldw, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, op, "ldy", a.ldy, a.n));
    // As MATMUL's: x_dtype and y_dtype must be set; w_dtype after the shapes, since a block
    // type's check divides k and ldw by its block.
    PAGODA_PLUGIN_CHECK(check_weight_dtype(r, op, "x_dtype", raw_enum(a.x_dtype)));
    PAGODA_PLUGIN_CHECK(
        check_row_weight_dtype(r, op, "w_dtype", raw_enum(a.w_dtype), a.k, packed_or(a.ldw, a.k)));
    PAGODA_PLUGIN_CHECK(check_weight_dtype(r, op, "y_dtype", raw_enum(a.y_dtype)));
    int64_t slots = 0;
    if (__builtin_mul_overflow(a.n_tokens, a.top_k, &slots))
        return invalid(r, op, "n_tokens × top_k is too large");
    // A supports query may leave `weights` NULL for a weighted launch: it then checks the
    // larger y, a row per slot.
    const int64_t x_rows = a.x_per_slot != 0 ? slots : a.n_tokens;
    const int64_t y_rows = a.weights != nullptr ? a.n_tokens : slots;
    const auto x_bytes = int64_t(formats::dtype_size(a.x_dtype)), y_bytes = int64_t(formats::dtype_size(a.y_dtype));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "x", x_rows, packed_or(a.ldx, a.k), a.k, x_bytes));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "experts", 1, a.n_experts, a.n_experts,
                                     int64_t(sizeof(void *))));
    PAGODA_PLUGIN_CHECK(
        check_weight_extent(r, op, "an expert's matrix", a.w_dtype, a.n, packed_or(a.ldw, a.k),
                            a.k));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "expert_ids", 1, slots, slots, 4));
    PAGODA_PLUGIN_CHECK(check_extent(r, op, "weights", 1, slots, slots, 4));
    return check_extent(r, op, "y", y_rows, packed_or(a.ldy, a.n), a.n, y_bytes);
}

}  // namespace pagoda::plugin
