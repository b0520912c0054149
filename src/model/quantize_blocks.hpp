// Encoding f32 values into GGUF's quantized block types (the inverse of quant_blocks.hpp's
// decoders), for `pagoda quantize`. The blocks follow ggml's layouts exactly, so any GGUF
// reader decodes them; how each block's scales are chosen is ours (a least-squares fit per
// sub-block, measured against ggml's reference quantizer in tests/model/test_quantize_blocks).
#pragma once

#include <cstdint>

#include "model/tensor_table.hpp"

namespace pagoda::model {

// IEEE binary16 bits of `v`, rounded to nearest even; values past the largest finite half
// become infinities, NaN stays NaN.
uint16_t float_to_half(float v);

// Encodes `elements` values (a whole number of blocks of quantized type `t`) from `src` into
// `dst`. Throws Error(PAGODA_ERR_INTERNAL) for a type that is not quantized, and
// Error(PAGODA_ERR_INVALID_ARGUMENT) for a non-finite value.
void quantize(TensorType t, const float *src, uint64_t elements, void *dst);

}  // namespace pagoda::model
