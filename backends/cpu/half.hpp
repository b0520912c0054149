// Scalar conversions between f32 and the 16-bit float types (round to nearest even).
// Vector conversions live inside the *_avx2.cpp files themselves: an inline function shared with
// them could be merged by the linker into portable code as its AVX2 copy.
#pragma once

#include <cstdint>
#include <cstring>

#include "pagoda/dtype.h"

namespace pagoda::cpu {

inline float bf16_to_f32(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40u);  // keep NaN quiet
    u += 0x7FFFu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t u;
    if (exp == 0x1F) {
        u = sign | 0x7F800000u | (man << 13);  // inf or NaN
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {  // subnormal: normalise
        int shift = 0;
        while ((man & 0x400u) == 0) {
            man <<= 1;
            ++shift;
        }
        u = sign | (uint32_t(113 - shift) << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline uint16_t f32_to_f16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN
    if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u); // rounds past 65504: infinity
    if (abs < 0x38800000u) {                                  // below f16's smallest normal
        if (abs < 0x33000000u) return sign;                   // below half the smallest subnormal
        const uint32_t exp = abs >> 23;
        const uint32_t man = (abs & 0x7FFFFFu) | 0x800000u;
        // The result counts units of 2^-24: shift the 24-bit significand right accordingly.
        const uint32_t shift = 126 - exp;
        const uint32_t kept = man >> shift;
        const uint32_t rest = man & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        uint32_t r = kept;
        if (rest > half || (rest == half && (kept & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    r += 0xFFFu + ((r >> 13) & 1u);  // round to nearest even on the 13 dropped bits
    return uint16_t(sign | (r >> 13));
}

// Element `i` of a weight array of type `dtype` (F32, BF16 or F16) as f32.
inline float load_weight(const void *base, pagoda_dtype_t dtype, int64_t i) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return bf16_to_f32(static_cast<const uint16_t *>(base)[i]);
        case PAGODA_DTYPE_F16: return f16_to_f32(static_cast<const uint16_t *>(base)[i]);
        default: return static_cast<const float *>(base)[i];
    }
}

// Stores `v` as element `i` of an array of type `dtype` (F32, BF16 or F16).
inline void store_value(void *base, pagoda_dtype_t dtype, int64_t i, float v) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: static_cast<uint16_t *>(base)[i] = f32_to_bf16(v); break;
        case PAGODA_DTYPE_F16: static_cast<uint16_t *>(base)[i] = f32_to_f16(v); break;
        default: static_cast<float *>(base)[i] = v; break;
    }
}

// Compile-time forms of load_weight and store_value, for kernels templated on the type of their
// activations (F32, BF16 or F16) so that the f32 form compiles to plain float accesses.
template <pagoda_dtype_t D>
inline float load_as_f32(const void *base, int64_t i) {
    if constexpr (D == PAGODA_DTYPE_BF16)
        return bf16_to_f32(static_cast<const uint16_t *>(base)[i]);
    else if constexpr (D == PAGODA_DTYPE_F16)
        return f16_to_f32(static_cast<const uint16_t *>(base)[i]);
    else
        return static_cast<const float *>(base)[i];
}

template <pagoda_dtype_t D>
inline void store_from_f32(void *base, int64_t i, float v) {
    if constexpr (D == PAGODA_DTYPE_BF16)
        static_cast<uint16_t *>(base)[i] = f32_to_bf16(v);
    else if constexpr (D == PAGODA_DTYPE_F16)
        static_cast<uint16_t *>(base)[i] = f32_to_f16(v);
    else
        static_cast<float *>(base)[i] = v;
}

inline bool is_weight_dtype(pagoda_dtype_t d) {
    return d == PAGODA_DTYPE_F32 || d == PAGODA_DTYPE_BF16 || d == PAGODA_DTYPE_F16;
}

}  // namespace pagoda::cpu
