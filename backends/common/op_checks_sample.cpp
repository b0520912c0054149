// Descriptor checks of SAMPLE and its pointer checks at launch.
#include "check_helpers.hpp"
#include "op_checks.hpp"
#include "sample_rules.hpp"

namespace pagoda::plugin {

namespace {
constexpr const char *kOp = "sample";
}  // namespace

pagoda_status_t check_sample(const Reporter &r, const pagoda_op_sample_t &a) {
    PAGODA_PLUGIN_CHECK(check_act_dtype(r, kOp, "logits_dtype", raw_enum(a.logits_dtype)));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "rows", a.rows));
    PAGODA_PLUGIN_CHECK(check_positive(r, kOp, "cols", a.cols));
    if (a.cols > INT32_MAX)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(kOp) + ": cols = " +
                                                       std::to_string(a.cols) +
                                                       " does not fit the int32 ids of out");
    PAGODA_PLUGIN_CHECK(check_stride(r, kOp, "ldx", a.ldx, a.cols));
    PAGODA_PLUGIN_CHECK(check_extent(r, kOp, "logits", a.rows, packed_or(a.ldx, a.cols), a.cols,
                                     int64_t(formats::dtype_size(act_dtype_of(a.logits_dtype)))));
    return PAGODA_OK;
}

pagoda_status_t check_sample_pointers(const Reporter &r, const pagoda_op_sample_t &a) {
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "logits", a.logits));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "temperature", a.temperature));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "top_k", a.top_k));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "top_p", a.top_p));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "min_p", a.min_p));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "uniform", a.uniform));
    PAGODA_PLUGIN_CHECK(check_pointer(r, kOp, "out", a.out));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
