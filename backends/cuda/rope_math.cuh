// RoPE's arithmetic on the GPU, shared by the ROPE kernel (rope_kernel.cu) and KV_WRITE's fused
// key rotation (kv_write_kernel.cu), so the keys the fused form stores are exactly those ROPE
// then KV_WRITE would store. It follows the CPU backend's rope_rotation.cpp operation for
// operation: inv_freq and the angle in double, cos/sin rounded to f32, then the rotation in f32.
// CUDA-only (.cu files).
#pragma once

#include <climits>
#include <cstdint>

#include "device_error.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

// Frequencies handled per pass of a block: 2 KiB of double inv_freq and 2 KiB of cos/sin in
// shared memory; longer rotations go chunk by chunk.
inline constexpr int kRopePairsPerChunk = 256;

// What the frequency table is built from: a checked pagoda_op_rope_t's scaling, in double.
struct RopeFrequencies {
    const float *freq_factors;  // device memory, or nullptr
    int64_t rot_dim, pairs;     // pairs = rot_dim / 2
    pagoda_rope_scaling_t scaling;
    double theta, factor, low_freq_factor, high_freq_factor, original_max_position;
};

inline RopeFrequencies rope_frequencies_of(const pagoda_op_rope_t &a) {
    RopeFrequencies f{};
    f.freq_factors = a.freq_factors;
    f.rot_dim = a.rot_dim == 0 ? a.head_dim : a.rot_dim;
    f.pairs = f.rot_dim / 2;
    f.scaling = a.scaling;
    f.theta = double(a.theta);
    f.factor = double(a.factor);
    f.low_freq_factor = double(a.low_freq_factor);
    f.high_freq_factor = double(a.high_freq_factor);
    f.original_max_position = double(a.original_max_position);
    return f;
}

// inv_freq[i] = theta^(-2i/rot_dim), scaled, then divided by freq_factors[i]: rope_rotation.cpp's
// build_inverse_frequencies, operation for operation. LINEAR's division of positions by
// `factor` is folded in as a division of the frequencies.
__device__ inline double inverse_frequency(const RopeFrequencies &p, int64_t i) {
    constexpr double kPi = 3.14159265358979323846;
    double f = pow(p.theta, -2.0 * double(i) / double(p.rot_dim));
    if (p.scaling == PAGODA_ROPE_SCALING_LINEAR) {
        f /= p.factor;
    } else if (p.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        // Meta's llama3 apply_scaling: keep short wavelengths, divide long ones by `factor`,
        // blend in between.
        const double omp = p.original_max_position;
        const double lo = p.low_freq_factor, hi = p.high_freq_factor;
        const double low_wavelen = omp / lo, high_wavelen = omp / hi;
        const double wavelen = 2.0 * kPi / f;
        if (wavelen >= high_wavelen) {
            if (wavelen > low_wavelen) {
                f /= p.factor;
            } else {
                const double s = (omp / wavelen - lo) / (hi - lo);
                f = (1.0 - s) * f / p.factor + s * f;
            }
        }
    }
    if (p.freq_factors != nullptr) f /= double(p.freq_factors[i]);
    return f;
}

// cos and sin of position · inv_freq, the angle in double (at position 128k an f32 angle is off
// by ~0.004 rad), rounded to f32.
__device__ __forceinline__ void rope_angle(int32_t position, double inv_freq, float &cos_v,
                                           float &sin_v) {
    double s, c;
    sincos(double(position) * inv_freq, &s, &c);
    cos_v = float(c);
    sin_v = float(s);
}

// One pair's rotation. Each product is rounded on its own (no fused multiply-add), as the CPU
// backend computes it, so that the same cos/sin give the same bits on both backends: KV_WRITE's
// caches are compared byte for byte.
__device__ __forceinline__ void rotate_pair(float x0, float x1, float cos_v, float sin_v,
                                            float &y0, float &y1) {
    y0 = __fsub_rn(__fmul_rn(x0, cos_v), __fmul_rn(x1, sin_v));
    y1 = __fadd_rn(__fmul_rn(x1, cos_v), __fmul_rn(x0, sin_v));
}

// Whether every freq_factors entry is finite and positive; otherwise the lowest bad index is
// recorded in `error` for `op` and false returned. Called by every thread of a block before it
// writes anything, so a bad factor leaves the output untouched whichever block sees it first;
// `first_bad` is a __shared__ variable of the caller. Returns the same value to every thread.
__device__ inline bool rope_freq_factors_valid(const RopeFrequencies &p, DeviceError *error,
                                               int32_t op, unsigned long long &first_bad) {
    if (p.freq_factors == nullptr) return true;
    if (threadIdx.x == 0) first_bad = ULLONG_MAX;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < p.pairs; i += blockDim.x) {
        const float v = p.freq_factors[i];
        if (!(isfinite(v) && v > 0.0f)) atomicMin(&first_bad, (unsigned long long)i);
    }
    __syncthreads();
    if (first_bad == ULLONG_MAX) return true;
    if (threadIdx.x == 0) {
        const int64_t i = int64_t(first_bad);
        report(error, op, DeviceErrorField::RopeFreqFactor, i,
               int64_t(__float_as_uint(p.freq_factors[i])), p.pairs);
    }
    return false;
}

}  // namespace pagoda::cuda
