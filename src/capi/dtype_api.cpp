// Names and sizes of element types and ops: the tables plugins use too (backends/common), so a
// backend's messages name types and ops exactly as the library does.
#include "capi/enum_arg.hpp"
#include "dtypes.hpp"
#include "names.hpp"
#include "pagoda/dtype.h"
#include "pagoda/ops.h"

namespace {

bool known_dtype(int v) { return v >= PAGODA_DTYPE_INVALID && v <= PAGODA_DTYPE_U8; }
bool known_op(int v) { return v >= PAGODA_OP_INVALID && v <= PAGODA_OP_ATTENTION_MERGE; }

}  // namespace

extern "C" {

PAGODA_API size_t pagoda_dtype_size(pagoda_dtype_t dtype) {
    const int v = pagoda::enum_arg(dtype);
    return known_dtype(v) ? pagoda::plugin::dtype_size(static_cast<pagoda_dtype_t>(v)) : 0;
}

PAGODA_API const char *pagoda_dtype_name(pagoda_dtype_t dtype) {
    const int v = pagoda::enum_arg(dtype);
    return known_dtype(v) ? pagoda::plugin::dtype_name(static_cast<pagoda_dtype_t>(v)) : "invalid";
}

PAGODA_API const char *pagoda_op_name(pagoda_op_t op) {
    const int v = pagoda::enum_arg(op);
    return known_op(v) ? pagoda::plugin::op_name(static_cast<pagoda_op_t>(v)) : "invalid";
}

}  // extern "C"
