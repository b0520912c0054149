// Bytes per element of each type, for plugins (which do not link libpagoda) and for libpagoda's
// own pagoda_dtype_size, so the two cannot disagree.
#pragma once

#include <cstddef>

#include "pagoda/dtype.h"

namespace pagoda::formats {

// The last type this header defines: raw values up to it are known.
inline constexpr int64_t kLastDtype = PAGODA_DTYPE_Q6_K;

// 0 for PAGODA_DTYPE_INVALID, the quantized block types (block_formats.hpp gives their block
// sizes) and values this header does not know.
inline size_t dtype_size(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_F32: return 4;
        case PAGODA_DTYPE_F16: return 2;
        case PAGODA_DTYPE_BF16: return 2;
        case PAGODA_DTYPE_I32: return 4;
        case PAGODA_DTYPE_I64: return 8;
        case PAGODA_DTYPE_I8: return 1;
        case PAGODA_DTYPE_U8: return 1;
        case PAGODA_DTYPE_Q8_0:
        case PAGODA_DTYPE_Q4_0:
        case PAGODA_DTYPE_Q4_K:
        case PAGODA_DTYPE_Q5_K:
        case PAGODA_DTYPE_Q6_K:
        case PAGODA_DTYPE_INVALID: break;
    }
    return 0;
}

}  // namespace pagoda::formats
