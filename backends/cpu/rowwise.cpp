// PAGODA_OP_ARGMAX (greedy sampling) and PAGODA_OP_SOFTMAX, one row at a time.
#include <cmath>

#include "check_helpers.hpp"
#include "kernels.hpp"

namespace pagoda::cpu {

namespace {

// The first maximum; a NaN counts as larger than any number (the first NaN wins), as in
// NumPy and PyTorch, so a broken logit row is visible rather than silently skipped.
int64_t argmax_row(const float *x, int64_t n) {
    int64_t best = 0;
    float best_v = x[0];
    if (std::isnan(best_v)) return 0;
    for (int64_t i = 1; i < n; ++i) {
        const float v = x[i];
        if (std::isnan(v)) return i;
        if (v > best_v) {
            best_v = v;
            best = i;
        }
    }
    return best;
}

// softmax(scale·x) = e^(scale·x − max) / Σ e^(scale·x − max): subtracting the max keeps every
// exponent ≤ 0, so nothing overflows. The sum is kept in double for long rows.
void softmax_row(const float *x, float *out, int64_t n, float scale) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i) mx = std::fmax(mx, scale * x[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(scale * x[i] - mx);
        out[i] = e;
        sum += e;
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) out[i] *= inv;
}

}  // namespace

pagoda_status_t run_argmax(CpuBackend &cpu, const pagoda_op_argmax_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "argmax", "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "argmax", "out", a.out));
    const int64_t ldx = plugin::packed_or(a.ldx, a.cols);
    const auto *x = static_cast<const float *>(a.x);
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) a.out[r] = int32_t(argmax_row(x + r * ldx, a.cols));
    });
    return PAGODA_OK;
}

pagoda_status_t run_softmax(CpuBackend &cpu, const pagoda_op_softmax_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "softmax", "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "softmax", "out", a.out));
    const int64_t ldx = plugin::packed_or(a.ldx, a.cols), ldo = plugin::packed_or(a.ldo, a.cols);
    const float scale = a.scale == 0.0f ? 1.0f : a.scale;
    const auto *x = static_cast<const float *>(a.x);
    auto *out = static_cast<float *>(a.out);
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            softmax_row(x + r * ldx, out + r * ldo, a.cols, scale);
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
