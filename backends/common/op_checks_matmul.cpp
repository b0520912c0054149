// The MATMUL descriptor check. ops.h: x, W and y each F32, BF16 or F16, in any combination, and
// W also a quantized block type whose blocks tile its rows; the bias is F32 whatever they are.
// A backend that runs only some combinations (the CUDA backend's GEMM routes, which take no
// block types) refuses the others in its own checks after this one.
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

namespace {

constexpr const char *kOp = "matmul";

// x_dtype, w_dtype, y_dtype in that order, so a descriptor with several faults always names
// the first. x_dtype and y_dtype were required fields in ABI 1.0, so unlike the activation types
// appended in 1.1 (check_act_dtype), 0 there is a descriptor nobody filled in.
pagoda_status_t check_matmul_dtypes(const Reporter &r, const pagoda_op_matmul_t &a) {
    PAGODA_PLUGIN_CHECK(check_weight_dtype(r, kOp, "x_dtype", raw_enum(a.x_dtype)));
    PAGODA_PLUGIN_CHECK(check_row_weight_dtype(r, kOp, "w_dtype", raw_enum(a.w_dtype), a.k,
                                               packed_or(a.ldw, a.k)));
    return check_weight_dtype(r, kOp, "y_dtype", raw_enum(a.y_dtype));
}

}  // namespace

pagoda_status_t check_matmul(const Reporter &r, const pagoda_op_matmul_t &a) {
    return check_matmul_variants(r, a, 0);
}

pagoda_status_t check_matmul_variants(const Reporter &r, const pagoda_op_matmul_t &a,
                                      int32_t variants) {
    if (a.variant < 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(kOp) + ": variant = " + std::to_string(a.variant) +
                          " is negative (0 is the backend's own choice, 1.. its variants)");
    if (a.variant > variants)
        return r.fail(PAGODA_ERR_UNSUPPORTED,
                      std::string(kOp) + ": variant = " + std::to_string(a.variant) +
                          ", but this backend has " + std::to_string(variants) +
                          " matmul variants");
    if ((a.flags & ~(PAGODA_MATMUL_ACCUMULATE | PAGODA_MATMUL_QUANTIZE_X |
                     PAGODA_MATMUL_QUANTIZE_X_BLOCK | PAGODA_MATMUL_ROUND_W)) != 0)
        return r.fail(PAGODA_ERR_UNSUPPORTED, std::string(kOp) +
                                                  ": flags = " + std::to_string(a.flags) +
                                                  " has bits this backend does not know");
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "m", a.m));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "n", a.n));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "k", a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldx", a.ldx, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldw", a.ldw, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldy", a.ldy, a.n));
    // After the shape checks: a block type's check divides k and ldw by its block.
    PAGODA_PLUGIN_CHECK(check_matmul_dtypes(r, a));
    if ((a.flags & PAGODA_MATMUL_QUANTIZE_X) != 0 && !formats::is_block_dtype(a.w_dtype))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(kOp) + ": PAGODA_MATMUL_QUANTIZE_X with w_dtype " +
                          formats::dtype_name(a.w_dtype) + ": it applies to block-quantized weights only");
    if ((a.flags & PAGODA_MATMUL_QUANTIZE_X_BLOCK) != 0 && (a.flags & PAGODA_MATMUL_QUANTIZE_X) == 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(kOp) + ": PAGODA_MATMUL_QUANTIZE_X_BLOCK without "
                                         "PAGODA_MATMUL_QUANTIZE_X: it widens that leave");
    if ((a.flags & PAGODA_MATMUL_ROUND_W) != 0 &&
        (!formats::is_block_dtype(a.w_dtype) ||
         (a.x_dtype != PAGODA_DTYPE_BF16 && a.x_dtype != PAGODA_DTYPE_F16)))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(kOp) + ": PAGODA_MATMUL_ROUND_W with w_dtype " +
                          formats::dtype_name(a.w_dtype) + " and x_dtype " + formats::dtype_name(a.x_dtype) +
                          ": it applies to block-quantized weights and bf16/f16 activations only");
    // The dtypes passed, so each has a size (W's per block).
    const auto x_bytes = int64_t(formats::dtype_size(a.x_dtype)), y_bytes = int64_t(formats::dtype_size(a.y_dtype));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "x", a.m, packed_or(a.ldx, a.k), a.k, x_bytes));
    PAGODA_PLUGIN_CHECK(
        check_weight_extent(r, kOp, "w", a.w_dtype, a.n, packed_or(a.ldw, a.k), a.k));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "y", a.m, packed_or(a.ldy, a.n), a.n, y_bytes));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
