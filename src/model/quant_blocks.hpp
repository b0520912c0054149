// GGUF's quantized block types (ggml's Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) as the model's tensor types:
// their block sizes and reference decoders, from src/formats (block_formats.hpp), which the
// plugins link too, so that the core and every kernel decode one way.
#pragma once

#include <cstdint>

#include "model/tensor_table.hpp"
#include "pagoda/dtype.h"

namespace pagoda::model {

// Elements per block and bytes per block; plain types are blocks of one element.
struct BlockLayout {
    uint64_t elements;
    uint64_t bytes;
};

BlockLayout block_layout(TensorType t);

// The element type kernels know a tensor type by.
pagoda_dtype_t dtype_of(TensorType t);

// Whether `t` is one of the quantized block types.
bool is_quantized(TensorType t);

// IEEE binary16 bits to float, exactly (the blocks' scales are f16).
float half_to_float(uint16_t h);

// Decodes `elements` values of quantized type `t` (a whole number of blocks) from `src` to
// `dst`. Throws Error(PAGODA_ERR_INTERNAL) for a type that is not quantized.
void dequantize(TensorType t, const void *src, uint64_t elements, float *dst);

}  // namespace pagoda::model
