// GGUF's quantized block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) decoded on the device, eight
// consecutive values at a time: the unit a lane of the GEMV, the panel widening and the
// embedding gather takes. Written from the block layouts src/formats/block_formats.cpp
// documents. decode8 evaluates each value as the plain decoder does, operation for operation
// in f32 (products and differences rounded separately, never fused), so the values are the
// reference's bit for bit; decode_group8 gives the same values factored (integers, a scale and
// a min) for the GEMV. CUDA-only (.cu files).
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

// Eight values of a row of blocks in factored form: value i = scale · q[i] - min, q[i] a small
// integer held exactly as a float (min is 0 for the types without mins). The GEMV multiplies x by
// q and applies scale and min once per eight values; decode8 evaluates each value in full.
struct Group8 {
    float q[8];
    float scale;
    float min;
};

namespace block_detail {

// Byte j of `word` as the float 2^23 + byte: its bits placed under the exponent of 2^23
// (0x4B000000) by one byte permutation, so that subtracting 2^23 (plus an offset) gives the
// integer exactly, without an int-to-float conversion (which an SM runs at a fraction of its
// f32 rate).
template <int J>
__device__ __forceinline__ float byte_plus_2p23(uint32_t word) {
    return __int_as_float(int(__byte_perm(word, 0x4B000000u, 0x7540u | J)));
}

// The eight bytes of `v` (j < 4 from v.x) as q[j] = byte - offset.
__device__ __forceinline__ void bytes_to_q(const uint2 &v, float offset, float (&q)[8]) {
    const float bias = 8388608.0f + offset;  // 2^23 + offset: exact for offsets below 2^23
    q[0] = byte_plus_2p23<0>(v.x) - bias;
    q[1] = byte_plus_2p23<1>(v.x) - bias;
    q[2] = byte_plus_2p23<2>(v.x) - bias;
    q[3] = byte_plus_2p23<3>(v.x) - bias;
    q[4] = byte_plus_2p23<0>(v.y) - bias;
    q[5] = byte_plus_2p23<1>(v.y) - bias;
    q[6] = byte_plus_2p23<2>(v.y) - bias;
    q[7] = byte_plus_2p23<3>(v.y) - bias;
}

}  // namespace block_detail

// The eight values from `col` (a multiple of 8) of the row of blocks at `row`, factored.
template <pagoda_dtype_t DT>
__device__ __forceinline__ Group8 decode_group8(const unsigned char *row, int64_t col) {
    using namespace block_detail;
    constexpr BlockLayout kLayout = block_layout(DT);
    const unsigned char *block = row + col / kLayout.elements * kLayout.bytes;
    const int at = int(col % kLayout.elements);
    Group8 g;
    g.min = 0.0f;
    if constexpr (DT == PAGODA_DTYPE_Q8_0) {
        // f16 d, 32 int8 q: value = q · d. The sign bit flipped makes each byte q + 128.
        g.scale = half_at(block);
        const uint2 raw = bytes8_at2(block + 2 + at);
        bytes_to_q(make_uint2(raw.x ^ 0x80808080u, raw.y ^ 0x80808080u), 128.0f, g.q);
    } else if constexpr (DT == PAGODA_DTYPE_Q4_0) {
        // f16 d, 16 bytes: low nibbles are values 0-15, high nibbles 16-31; value = (q - 8) · d.
        g.scale = half_at(block);
        const uint2 raw = bytes8_at2(block + 2 + (at & 15));
        const int shift = at < 16 ? 0 : 4;
        bytes_to_q(make_uint2((raw.x >> shift) & 0x0F0F0F0Fu, (raw.y >> shift) & 0x0F0F0F0Fu),
                   8.0f, g.q);
    } else if constexpr (DT == PAGODA_DTYPE_Q4_K || DT == PAGODA_DTYPE_Q5_K) {
        // f16 d and dmin, 12 bytes of scales and mins, (Q5_K: 32 bytes of fifth bits,) 128
        // bytes of nibbles: each 64 values share 32 bytes, low nibbles the first sub-block of
        // the pair; value = d·scale · q - dmin·min.
        constexpr bool kFifthBit = DT == PAGODA_DTYPE_Q5_K;
        const int pair = at / 64, sub = at / 32, l0 = at % 32;
        float scale, min;
        scale_and_min(block + 4, sub, scale, min);
        g.scale = half_at(block) * scale;
        g.min = half_at(block + 2) * min;
        const uint2 raw = bytes8_at8(block + (kFifthBit ? 48 : 16) + 32 * pair + l0);
        const int shift = (sub & 1) * 4;
        uint2 v = make_uint2((raw.x >> shift) & 0x0F0F0F0Fu, (raw.y >> shift) & 0x0F0F0F0Fu);
        if constexpr (kFifthBit) {
            const uint2 high = bytes8_at8(block + 16 + l0);
            v.x |= ((high.x >> sub) & 0x01010101u) << 4;
            v.y |= ((high.y >> sub) & 0x01010101u) << 4;
        }
        bytes_to_q(v, 0.0f, g.q);
    } else {
        static_assert(DT == PAGODA_DTYPE_Q6_K, "decode_group8: not a block type");
        // 128 bytes of low nibbles ql, 64 of high 2-bit pairs qh, 16 int8 scales, f16 d. Half
        // h of the block (128 values) reads ql[64h ..], qh[32h ..]; quarter q of it takes
        // ql[l] (q = 0, 2) or ql[l + 32] (q = 1, 3), low nibbles for q < 2, and bits 2q of
        // qh[l]; value = d·scale · (q6 - 32), a scale per 16 values.
        const int half = at / 128, quarter = (at % 128) / 32, l0 = at % 32;
        const uint2 low = bytes8_at2(block + 64 * half + 32 * (quarter & 1) + l0);
        const uint2 high = bytes8_at2(block + 128 + 32 * half + l0);
        const int scale = int(int8_t(block[192 + 8 * half + l0 / 16 + 2 * quarter]));
        g.scale = half_at(block + 208) * float(scale);
        const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
        const uint2 v = make_uint2(((low.x >> low_shift) & 0x0F0F0F0Fu) |
                                       (((high.x >> high_shift) & 0x03030303u) << 4),
                                   ((low.y >> low_shift) & 0x0F0F0F0Fu) |
                                       (((high.y >> high_shift) & 0x03030303u) << 4));
        bytes_to_q(v, 32.0f, g.q);
    }
    return g;
}

// out[i] = value col + i of the row of blocks at `row`, i < 8; `col` a multiple of 8. Each value
// is scale·q rounded, then min subtracted and rounded (never fused), as the reference computes
// it (for the types without mins, q·d; subtracting 0 changes no bit, -0 included).
template <pagoda_dtype_t DT>
__device__ __forceinline__ void decode8(const unsigned char *row, int64_t col, float (&out)[8]) {
    const Group8 g = decode_group8<DT>(row, col);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fsub_rn(__fmul_rn(g.scale, g.q[i]), g.min);
}

// Whether a block type's values subtract a min (the GEMV then needs the sum of x).
__host__ __device__ constexpr bool block_has_min(pagoda_dtype_t dtype) {
    return dtype == PAGODA_DTYPE_Q4_K || dtype == PAGODA_DTYPE_Q5_K;
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
