// The MATMUL descriptor check. ops.h's contract is f32 activations with f32, bf16 or f16
// weights; a backend with half-precision GEMMs (MatmulActivations::F32OrHalf) also takes x, W
// and y all in one half type, the bias then in y's type.
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

namespace {

constexpr const char *kOp = "matmul";

// x_dtype, w_dtype, y_dtype in that order, so a descriptor with several faults names the same
// one whichever activation set a backend takes.
pagoda_status_t check_matmul_dtypes(const Reporter &r, const pagoda_op_matmul_t &a,
                                    MatmulActivations activations) {
    const int64_t x = raw_enum(a.x_dtype), w = raw_enum(a.w_dtype), y = raw_enum(a.y_dtype);
    if (activations == MatmulActivations::F32Only) {
        PAGODA_PLUGIN_CHECK(check_f32(r, kOp, "x_dtype", x));
        PAGODA_PLUGIN_CHECK(check_weight_dtype(r, kOp, "w_dtype", w));
        return check_f32(r, kOp, "y_dtype", y);
    }
    if (!is_weight_dtype(x)) return dtype_error(r, kOp, "x_dtype", x, "f32, bf16 or f16");
    PAGODA_PLUGIN_CHECK(check_weight_dtype(r, kOp, "w_dtype", w));
    const std::string like_x = std::string(dtype_name(pagoda_dtype_t(x))) + " like x_dtype";
    // f32 activations take any weight type (widened on the fly); half activations run on a
    // half-precision GEMM, whose inputs share one type.
    if (x != PAGODA_DTYPE_F32 && w != x) return dtype_error(r, kOp, "w_dtype", w, like_x);
    if (y != x) return dtype_error(r, kOp, "y_dtype", y, like_x);
    return PAGODA_OK;
}

}  // namespace

pagoda_status_t check_matmul(const Reporter &r, const pagoda_op_matmul_t &a,
                             MatmulActivations activations) {
    if ((a.flags & ~PAGODA_MATMUL_ACCUMULATE) != 0)
        return r.fail(PAGODA_ERR_UNSUPPORTED, std::string(kOp) +
                                                  ": flags = " + std::to_string(a.flags) +
                                                  " has bits this backend does not know");
    PAGODA_PLUGIN_CHECK(check_matmul_dtypes(r, a, activations));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "m", a.m));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "n", a.n));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "k", a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldx", a.ldx, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldw", a.ldw, a.k));
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldy", a.ldy, a.n));
    // The dtypes passed, so each has a size.
    const auto x_bytes = int64_t(dtype_size(a.x_dtype)), w_bytes = int64_t(dtype_size(a.w_dtype)),
               y_bytes = int64_t(dtype_size(a.y_dtype));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "x", a.m, packed_or(a.ldx, a.k), a.k, x_bytes));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "w", a.n, packed_or(a.ldw, a.k), a.k, w_bytes));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "y", a.m, packed_or(a.ldy, a.n), a.n, y_bytes));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
