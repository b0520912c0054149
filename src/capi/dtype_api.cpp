// Names and sizes of element types and ops: the tables plugins use too (backends/common), so a
// backend's messages name types and ops exactly as the library does.
#include "dtypes.hpp"
#include "names.hpp"
#include "pagoda/dtype.h"
#include "pagoda/ops.h"

extern "C" {

PAGODA_API size_t pagoda_dtype_size(pagoda_dtype_t dtype) {
    return pagoda::plugin::dtype_size(dtype);
}

PAGODA_API const char *pagoda_dtype_name(pagoda_dtype_t dtype) {
    return pagoda::plugin::dtype_name(dtype);
}

PAGODA_API const char *pagoda_op_name(pagoda_op_t op) {
    return pagoda::plugin::op_name(op);
}

}  // extern "C"
