// Names and sizes of element types and ops: the tables plugins use too (src/formats), so a
// backend's messages name types and ops exactly as the library does.
#include <string>

#include "formats/block_formats.hpp"
#include "capi/enum_arg.hpp"
#include "common/error.hpp"
#include "formats/dtypes.hpp"
#include "formats/names.hpp"
#include "pagoda/dtype.h"
#include "pagoda/ops.h"

namespace {

bool known_dtype(int v) { return v > PAGODA_DTYPE_INVALID && v <= pagoda::formats::kLastDtype; }
bool known_op(int v) { return v >= PAGODA_OP_INVALID && v <= PAGODA_OP_MOE_MATMUL; }

}  // namespace

extern "C" {

PAGODA_API size_t pagoda_dtype_size(pagoda_dtype_t dtype) {
    const int v = pagoda::enum_arg(dtype);
    return known_dtype(v) ? pagoda::formats::dtype_size(static_cast<pagoda_dtype_t>(v)) : 0;
}

PAGODA_API pagoda_status_t pagoda_dtype_block(pagoda_dtype_t dtype, int64_t *elements,
                                              size_t *bytes) {
    const int v = pagoda::enum_arg(dtype);
    const pagoda::formats::BlockShape b =
        known_dtype(v) ? pagoda::formats::block_shape(static_cast<pagoda_dtype_t>(v))
                       : pagoda::formats::BlockShape{0, 0};
    if (elements != nullptr) *elements = b.elements;
    if (bytes != nullptr) *bytes = size_t(b.bytes);
    if (b.elements > 0) return PAGODA_OK;
    pagoda::set_last_error("pagoda_dtype_block: dtype " + std::to_string(v) + " is not a type");
    return PAGODA_ERR_INVALID_ARGUMENT;
}

PAGODA_API const char *pagoda_dtype_name(pagoda_dtype_t dtype) {
    const int v = pagoda::enum_arg(dtype);
    return known_dtype(v) ? pagoda::formats::dtype_name(static_cast<pagoda_dtype_t>(v)) : "invalid";
}

PAGODA_API const char *pagoda_op_name(pagoda_op_t op) {
    const int v = pagoda::enum_arg(op);
    return known_op(v) ? pagoda::formats::op_name(static_cast<pagoda_op_t>(v)) : "invalid";
}

}  // extern "C"
