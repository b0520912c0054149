#include "model/quant_blocks.hpp"

#include <string>

#include "formats/block_formats.hpp"
#include "common/error.hpp"

namespace pagoda::model {

pagoda_dtype_t dtype_of(TensorType t) {
    switch (t) {
    case TensorType::F32: return PAGODA_DTYPE_F32;
    case TensorType::F16: return PAGODA_DTYPE_F16;
    case TensorType::BF16: return PAGODA_DTYPE_BF16;
    case TensorType::Q8_0: return PAGODA_DTYPE_Q8_0;
    case TensorType::Q4_0: return PAGODA_DTYPE_Q4_0;
    case TensorType::Q4_K: return PAGODA_DTYPE_Q4_K;
    case TensorType::Q5_K: return PAGODA_DTYPE_Q5_K;
    case TensorType::Q6_K: return PAGODA_DTYPE_Q6_K;
    case TensorType::I32: return PAGODA_DTYPE_I32;
    case TensorType::I64: return PAGODA_DTYPE_I64;
    }
    throw Error(PAGODA_ERR_INTERNAL, "dtype_of: unknown TensorType");
}

BlockLayout block_layout(TensorType t) {
    const formats::BlockShape b = formats::block_shape(dtype_of(t));
    return {uint64_t(b.elements), uint64_t(b.bytes)};
}

bool is_quantized(TensorType t) { return formats::is_block_dtype(dtype_of(t)); }

float half_to_float(uint16_t h) { return formats::half_bits_to_float(h); }

void dequantize(TensorType t, const void *src, uint64_t elements, float *dst) {
    if (!is_quantized(t))
        throw Error(PAGODA_ERR_INTERNAL, std::string("dequantize: ") + tensor_type_name(t) +
                                             " is not a quantized type");
    formats::decode_blocks(dtype_of(t), src, int64_t(elements / block_layout(t).elements), dst);
}

}  // namespace pagoda::model
