// PAGODA_OP_ROPE: rotary position embedding (Su et al., RoFormer, arXiv:2104.09864, Eq. 34), in
// place, with Hugging Face's half-split or GPT-J's interleaved pairing.
//
// The frequency table is built once per launch in double. Angles are position · inv_freq in
// double too: at position 128k an f32 angle is off by ~0.004 rad, a visible error in attention.
// Each token's cos/sin are computed once and shared by all its heads.
#include <algorithm>
#include <cmath>
#include <new>
#include <numbers>
#include <vector>

#include "check_helpers.hpp"
#include "kernels.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "rope";

// Frequencies handled per block, so each thread's cos/sin scratch lives on its stack.
constexpr int64_t kPairsPerBlock = 128;

int64_t rot_dim_of(const pagoda_op_rope_t &a) { return a.rot_dim == 0 ? a.head_dim : a.rot_dim; }

// inv_freq[i] = theta^(-2i/rot_dim), scaled as `a.scaling` says; LINEAR's division of positions
// by `factor` is folded in as a division of the frequencies.
std::vector<double> inverse_frequencies(const pagoda_op_rope_t &a, int64_t rot_dim) {
    std::vector<double> inv(size_t(rot_dim / 2));
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
    return inv;
}

struct Rotation {
    const pagoda_op_rope_t *a;
    const double *inv_freq;
    int64_t rot_dim;
    int64_t token_stride;
};

// Rotates pairs [p0, p0 + n) of every head of token t.
void rotate_block(const Rotation &r, int64_t t, int64_t p0, int64_t n) {
    float cos_t[kPairsPerBlock], sin_t[kPairsPerBlock];
    const double pos = double(r.a->positions[t]);
    for (int64_t i = 0; i < n; ++i) {
        const double angle = pos * r.inv_freq[p0 + i];
        cos_t[i] = float(std::cos(angle));
        sin_t[i] = float(std::sin(angle));
    }
    const int64_t half = r.rot_dim / 2;
    float *token = static_cast<float *>(r.a->x) + t * r.token_stride;
    for (int64_t h = 0; h < r.a->n_heads; ++h) {
        float *x = token + h * r.a->head_dim;
        if (r.a->layout == PAGODA_ROPE_HALF_SPLIT) {
            for (int64_t i = 0; i < n; ++i) {
                const float x0 = x[p0 + i], x1 = x[p0 + i + half];
                x[p0 + i] = x0 * cos_t[i] - x1 * sin_t[i];
                x[p0 + i + half] = x1 * cos_t[i] + x0 * sin_t[i];
            }
        } else {
            for (int64_t i = 0; i < n; ++i) {
                const float x0 = x[2 * (p0 + i)], x1 = x[2 * (p0 + i) + 1];
                x[2 * (p0 + i)] = x0 * cos_t[i] - x1 * sin_t[i];
                x[2 * (p0 + i) + 1] = x1 * cos_t[i] + x0 * sin_t[i];
            }
        }
    }
}

}  // namespace

pagoda_status_t run_rope(CpuBackend &cpu, const pagoda_op_rope_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "positions", a.positions));
    const int64_t rot_dim = rot_dim_of(a);
    if (a.freq_factors != nullptr)
        for (int64_t i = 0; i < rot_dim / 2; ++i)
            if (!(std::isfinite(a.freq_factors[i]) && a.freq_factors[i] > 0.0f))
                return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                                std::string(kOp) + ": freq_factors[" + std::to_string(i) +
                                    "] = " + plugin::float_text(a.freq_factors[i]) +
                                    " must be finite and positive");
    std::vector<double> inv_freq;
    try {
        inv_freq = inverse_frequencies(a, rot_dim);
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        std::string(kOp) + ": no memory for the frequency table");
    }
    const Rotation r{&a, inv_freq.data(), rot_dim,
                     plugin::packed_or(a.token_stride, a.n_heads * a.head_dim)};
    const int64_t pairs = rot_dim / 2;
    // A token also costs rot_dim/2 double sin/cos pairs, so smaller chunks than a plain
    // elementwise pass are worth handing out.
    const int64_t grain = rows_per_chunk(a.n_heads * rot_dim, 4096);
    cpu.pool().parallel_for(a.n_tokens, grain, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
            for (int64_t p0 = 0; p0 < pairs; p0 += kPairsPerBlock)
                rotate_block(r, t, p0, std::min(kPairsPerBlock, pairs - p0));
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
