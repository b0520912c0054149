// RoPE's frequency table, angles and pair rotation (rope_rotation.hpp).
#include "rope_rotation.hpp"

#include <cmath>
#include <new>
#include <numbers>
#include <string>

#include "check_helpers.hpp"

namespace pagoda::cpu {

namespace {

// inv_freq[i] = theta^(-2i/rot_dim), scaled as `a.scaling` says; LINEAR's division of positions
// by `factor` is folded in as a division of the frequencies.
void build_inverse_frequencies(const pagoda_op_rope_t &a, int64_t rot_dim,
                               std::vector<double> &inv) {
    inv.resize(size_t(rot_dim / 2));
    for (size_t i = 0; i < inv.size(); ++i)
        inv[i] = std::pow(double(a.theta), -2.0 * double(i) / double(rot_dim));
    if (a.scaling == PAGODA_ROPE_SCALING_LINEAR) {
        for (double &f : inv) f /= double(a.factor);
    } else if (a.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        // Meta's llama3 apply_scaling: keep short wavelengths, divide long ones by `factor`,
        // blend in between.
        const double omp = double(a.original_max_position);
        const double lo = double(a.low_freq_factor), hi = double(a.high_freq_factor);
        const double low_wavelen = omp / lo, high_wavelen = omp / hi;
        for (double &f : inv) {
            const double wavelen = 2.0 * std::numbers::pi / f;
            if (wavelen < high_wavelen) continue;
            if (wavelen > low_wavelen) {
                f /= double(a.factor);
            } else {
                const double s = (omp / wavelen - lo) / (hi - lo);
                f = (1.0 - s) * f / double(a.factor) + s * f;
            }
        }
    }
    if (a.freq_factors != nullptr)
        for (size_t i = 0; i < inv.size(); ++i) inv[i] /= double(a.freq_factors[i]);
}

}  // namespace

pagoda_status_t rope_inverse_frequencies(CpuBackend &cpu, const char *op,
                                         const char *field_prefix, const pagoda_op_rope_t &a,
                                         std::vector<double> &inv_freq) {
    const int64_t rot_dim = rope_rot_dim(a);
    if (a.freq_factors != nullptr)
        for (int64_t i = 0; i < rot_dim / 2; ++i)
            if (!(std::isfinite(a.freq_factors[i]) && a.freq_factors[i] > 0.0f))
                return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                                std::string(op) + ": " + field_prefix + "freq_factors[" +
                                    std::to_string(i) +
                                    "] = " + plugin::float_text(a.freq_factors[i]) +
                                    " must be finite and positive");
    try {
        build_inverse_frequencies(a, rot_dim, inv_freq);
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        std::string(op) + ": no memory for the frequency table");
    }
    return PAGODA_OK;
}

void rope_angles(int32_t position, const double *inv_freq, int64_t n, float *cos_t,
                 float *sin_t) {
    const double pos = double(position);
    for (int64_t i = 0; i < n; ++i) {
        const double angle = pos * inv_freq[i];
        cos_t[i] = float(std::cos(angle));
        sin_t[i] = float(std::sin(angle));
    }
}

void rope_rotate_head(pagoda_rope_layout_t layout, int64_t pairs, const float *src, float *dst,
                      int64_t p0, int64_t n, const float *cos_t, const float *sin_t) {
    // Both elements of a pair are read before either is written, so dst may be src.
    if (layout == PAGODA_ROPE_HALF_SPLIT) {
        // Element i pairs with i + rot_dim/2.
        for (int64_t i = 0; i < n; ++i) {
            const float x0 = src[p0 + i], x1 = src[p0 + i + pairs];
            dst[p0 + i] = x0 * cos_t[i] - x1 * sin_t[i];
            dst[p0 + i + pairs] = x1 * cos_t[i] + x0 * sin_t[i];
        }
    } else {
        // Element 2i pairs with 2i + 1.
        for (int64_t i = 0; i < n; ++i) {
            const float x0 = src[2 * (p0 + i)], x1 = src[2 * (p0 + i) + 1];
            dst[2 * (p0 + i)] = x0 * cos_t[i] - x1 * sin_t[i];
            dst[2 * (p0 + i) + 1] = x1 * cos_t[i] + x0 * sin_t[i];
        }
    }
}

}  // namespace pagoda::cpu
