// GGUF's quantized block types (ggml's Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) as pagoda_dtype_t: their
// block sizes, and plain scalar decoders to f32 written from ggml's block layouts. These decoders
// are the reference every quantized kernel is checked against (they match ggml's own decoders
// bit for bit: tests/model/test_quant_formats.cpp). Built into libpagoda and into every plugin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pagoda/dtype.h"

namespace pagoda::formats {

// Values per block and bytes per block; a plain type is a block of one value. {0, 0} for
// PAGODA_DTYPE_INVALID and values this header does not know.
struct BlockShape {
    int64_t elements;
    int64_t bytes;
};

BlockShape block_shape(pagoda_dtype_t dtype);

// Whether `dtype` is one of the quantized block types.
bool is_block_dtype(pagoda_dtype_t dtype);

// Bytes of `elements` values of `dtype` (a whole number of blocks: the caller checked).
inline int64_t row_bytes(pagoda_dtype_t dtype, int64_t elements) {
    const BlockShape b = block_shape(dtype);
    return b.elements == 0 ? 0 : elements / b.elements * b.bytes;
}

// IEEE binary16 bits to float, exactly (the blocks' scales are f16).
float half_bits_to_float(uint16_t h);

// The f16 stored at `p` (a block's scale field; any alignment) as a float.
inline float half_at_bytes(const unsigned char *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return half_bits_to_float(h);
}

// Q4_K's and Q5_K's 6-bit scale and min of sub-block `sub` (0-7) from their 12 packed bytes.
void scale_and_min(const unsigned char *packed, int sub, float *scale, float *min);

// Decodes `blocks` whole blocks of the quantized type `dtype` from `src` into
// blocks × block_shape(dtype).elements floats at `dst`. Nothing for a type that is not quantized.
void decode_blocks(pagoda_dtype_t dtype, const void *src, int64_t blocks, float *dst);

}  // namespace pagoda::formats
