// GGUF's quantized block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) decoded on the device, eight
// consecutive values at a time: the unit a lane of the GEMV, the panel widening and the
// embedding gather takes. Written from the block layouts backends/common/block_formats.cpp
// documents, evaluating each value as its plain decoder does, operation for operation in f32
// (products and differences rounded separately, never fused), so the values are the reference's
// bit for bit. CUDA-only (.cu files).
//
// Eight values never straddle a scale: every type's scales cover runs of 16 or 32 values, and
// the eight start at a multiple of 8. The loads assume the block data aligned as a row of a
// device allocation is: 2 bytes for Q8_0, Q4_0 and Q6_K (blocks of 34, 18 and 210 bytes), 8 for
// Q4_K and Q5_K (144 and 176); block_alignment() says which, for the launchers to check.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cuda {

// Values and bytes per block of a block type; {0, 0} for any other type.
struct BlockLayout {
    int64_t elements;
    int64_t bytes;
};

__host__ __device__ constexpr BlockLayout block_layout(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_Q8_0: return {32, 34};
        case PAGODA_DTYPE_Q4_0: return {32, 18};
        case PAGODA_DTYPE_Q4_K: return {256, 144};
        case PAGODA_DTYPE_Q5_K: return {256, 176};
        case PAGODA_DTYPE_Q6_K: return {256, 210};
        default: return {0, 0};
    }
}

// Bytes of a row of `ld` values (a whole number of blocks) of a block type.
__host__ __device__ constexpr int64_t block_row_bytes(pagoda_dtype_t dtype, int64_t ld) {
    return ld / block_layout(dtype).elements * block_layout(dtype).bytes;
}

// The alignment decode8 needs of block data: the widest load it makes.
__host__ __device__ constexpr uintptr_t block_alignment(pagoda_dtype_t dtype) {
    return dtype == PAGODA_DTYPE_Q4_K || dtype == PAGODA_DTYPE_Q5_K ? 8 : 2;
}

namespace block_detail {

__device__ __forceinline__ float half_at(const unsigned char *p) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short *>(p)));
}

// 8 bytes at a 2-byte-aligned address, as two little-endian words.
__device__ __forceinline__ uint2 bytes8_at2(const unsigned char *p) {
    const auto *h = reinterpret_cast<const unsigned short *>(p);
    return make_uint2(uint32_t(h[0]) | uint32_t(h[1]) << 16, uint32_t(h[2]) | uint32_t(h[3]) << 16);
}

// 8 bytes at an 8-byte-aligned address.
__device__ __forceinline__ uint2 bytes8_at8(const unsigned char *p) {
    return *reinterpret_cast<const uint2 *>(p);
}

__device__ __forceinline__ uint32_t byte_of(const uint2 &v, int i) {
    return ((i < 4 ? v.x : v.y) >> (8 * (i & 3))) & 0xFFu;
}

// Q4_K's and Q5_K's 6-bit scale and min of sub-block `sub` (0-7) from their 12 packed bytes
// (block_formats.cpp, scale_and_min).
__device__ __forceinline__ void scale_and_min(const unsigned char *packed, int sub, float &scale,
                                              float &min) {
    if (sub < 4) {
        scale = float(packed[sub] & 63);
        min = float(packed[sub + 4] & 63);
    } else {
        scale = float((packed[sub + 4] & 0x0F) | ((packed[sub - 4] >> 6) << 4));
        min = float((packed[sub + 4] >> 4) | ((packed[sub] >> 6) << 4));
    }
}

}  // namespace block_detail

// out[i] = value col + i of the row of blocks at `row`, i < 8; `col` a multiple of 8.
template <pagoda_dtype_t DT>
__device__ __forceinline__ void decode8(const unsigned char *row, int64_t col, float (&out)[8]) {
    using namespace block_detail;
    constexpr BlockLayout kLayout = block_layout(DT);
    const unsigned char *block = row + col / kLayout.elements * kLayout.bytes;
    const int at = int(col % kLayout.elements);
    if constexpr (DT == PAGODA_DTYPE_Q8_0) {
        // f16 d, 32 int8 q: value = q · d.
        const float d = half_at(block);
        const uint2 q = bytes8_at2(block + 2 + at);
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = float(int8_t(byte_of(q, i))) * d;
    } else if constexpr (DT == PAGODA_DTYPE_Q4_0) {
        // f16 d, 16 bytes: low nibbles are values 0-15, high nibbles 16-31; value = (q - 8) · d.
        const float d = half_at(block);
        const uint2 q = bytes8_at2(block + 2 + (at & 15));
        const int shift = at < 16 ? 0 : 4;
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = float(int((byte_of(q, i) >> shift) & 0x0F) - 8) * d;
    } else if constexpr (DT == PAGODA_DTYPE_Q4_K || DT == PAGODA_DTYPE_Q5_K) {
        // f16 d and dmin, 12 bytes of scales and mins, (Q5_K: 32 bytes of fifth bits,) 128
        // bytes of nibbles: each 64 values share 32 bytes, low nibbles the first sub-block of
        // the pair; value = d·scale · q - dmin·min.
        constexpr bool kFifthBit = DT == PAGODA_DTYPE_Q5_K;
        const int pair = at / 64, sub = at / 32, l0 = at % 32;
        float scale, min;
        scale_and_min(block + 4, sub, scale, min);
        const float d = half_at(block) * scale, m = half_at(block + 2) * min;
        const uint2 q = bytes8_at8(block + (kFifthBit ? 48 : 16) + 32 * pair + l0);
        const int shift = (sub & 1) * 4;
        uint2 high = make_uint2(0, 0);
        if constexpr (kFifthBit) high = bytes8_at8(block + 16 + l0);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            uint32_t v = (byte_of(q, i) >> shift) & 0x0F;
            if constexpr (kFifthBit) v += ((byte_of(high, i) >> sub) & 1) * 16;
            out[i] = __fsub_rn(__fmul_rn(d, float(v)), m);
        }
    } else {
        static_assert(DT == PAGODA_DTYPE_Q6_K, "decode8: not a block type");
        // 128 bytes of low nibbles ql, 64 of high 2-bit pairs qh, 16 int8 scales, f16 d. Half
        // h of the block (128 values) reads ql[64h ..], qh[32h ..]; quarter q of it takes
        // ql[l] (q = 0, 2) or ql[l + 32] (q = 1, 3), low nibbles for q < 2, and bits 2q of
        // qh[l]; value = d·scale · (q6 - 32), a scale per 16 values.
        const int half = at / 128, quarter = (at % 128) / 32, l0 = at % 32;
        const uint2 low = bytes8_at2(block + 64 * half + 32 * (quarter & 1) + l0);
        const uint2 high = bytes8_at2(block + 128 + 32 * half + l0);
        const int scale = int(int8_t(block[192 + 8 * half + l0 / 16 + 2 * quarter]));
        const float ds = half_at(block + 208) * float(scale);
        const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int q = int(((byte_of(low, i) >> low_shift) & 0x0F) |
                              (((byte_of(high, i) >> high_shift) & 3) << 4)) - 32;
            out[i] = ds * float(q);
        }
    }
}

// Names a block type as a value, so a generic lambda can recover it:
// `[&](auto tag) { constexpr pagoda_dtype_t DT = decltype(tag)::value; ... }`.
template <pagoda_dtype_t DT>
struct BlockTag {
    static constexpr pagoda_dtype_t value = DT;
};

// Calls `body(BlockTag<DT>{})` for the block type `dtype` and returns what it returns;
// cudaErrorInvalidValue for any other type.
template <typename Body>
cudaError_t with_block_type(pagoda_dtype_t dtype, Body &&body) {
    switch (dtype) {
        case PAGODA_DTYPE_Q8_0: return body(BlockTag<PAGODA_DTYPE_Q8_0>{});
        case PAGODA_DTYPE_Q4_0: return body(BlockTag<PAGODA_DTYPE_Q4_0>{});
        case PAGODA_DTYPE_Q4_K: return body(BlockTag<PAGODA_DTYPE_Q4_K>{});
        case PAGODA_DTYPE_Q5_K: return body(BlockTag<PAGODA_DTYPE_Q5_K>{});
        case PAGODA_DTYPE_Q6_K: return body(BlockTag<PAGODA_DTYPE_Q6_K>{});
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace pagoda::cuda
