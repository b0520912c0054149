#include "widen.hpp"

#include <cstring>

#include "block_formats.hpp"
#include "cpu_backend.hpp"
#include "half.hpp"

namespace pagoda::cpu {

void widen_to_f32(const CpuFeatures &features, const void *src, pagoda_dtype_t dtype, int64_t n,
                  float *dst) {
    if (formats::is_block_dtype(dtype)) {
        const int64_t blocks = n / formats::block_shape(dtype).elements;
        if (features.avx2_fma_f16c)
            decode_blocks_avx2(dtype, src, blocks, dst);
        else
            formats::decode_blocks(dtype, src, blocks, dst);
    } else if (dtype == PAGODA_DTYPE_F32) {
        std::memcpy(dst, src, size_t(n) * sizeof(float));
    } else if (features.avx2_fma_f16c) {
        widen_to_f32_avx2(src, dtype, n, dst);
    } else {
        const auto *h = static_cast<const uint16_t *>(src);
        if (dtype == PAGODA_DTYPE_BF16)
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
        else
            for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
    }
}

void narrow_from_f32(const CpuFeatures &features, const float *src, pagoda_dtype_t dtype,
                     int64_t n, void *dst) {
    if (dtype == PAGODA_DTYPE_F32) {
        std::memcpy(dst, src, size_t(n) * sizeof(float));
    } else if (features.avx2_fma_f16c) {
        narrow_from_f32_avx2(src, dtype, n, dst);
    } else {
        auto *h = static_cast<uint16_t *>(dst);
        if (dtype == PAGODA_DTYPE_BF16)
            for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
        else
            for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
    }
}

}  // namespace pagoda::cpu
