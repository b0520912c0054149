// PAGODA_OP_ARGMAX (greedy sampling) and PAGODA_OP_SOFTMAX, one row at a time. bf16/f16 rows
// are widened to f32 (exactly) into per-thread scratch and softmax's results rounded once, so
// every type runs the f32 code.
#include <atomic>
#include <cmath>
#include <new>
#include <string>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "scratch.hpp"
#include "widen.hpp"

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

// Row-sized f32 areas of a pool worker (or the launching thread); the pool's workers must not
// throw, so a failed allocation is flagged and reported after the loop.
struct RowAreas {
    std::atomic<bool> *out_of_memory;
    float *get(size_t floats) const {
        try {
            return thread_scratch<struct RowwiseScratch>(floats);
        } catch (const std::bad_alloc &) {
            *out_of_memory = true;
            return nullptr;
        }
    }
};

pagoda_status_t no_memory(CpuBackend &cpu, const char *op, int64_t cols) {
    return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(op) + ": no memory to widen a row of " +
                                                  std::to_string(cols) + " elements to f32");
}

}  // namespace

pagoda_status_t run_argmax(CpuBackend &cpu, const pagoda_op_argmax_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "argmax", "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "argmax", "out", a.out));
    const int64_t ldx = plugin::packed_or(a.ldx, a.cols);
    const pagoda_dtype_t dtype = plugin::act_dtype_of(a.act_dtype);
    if (dtype == PAGODA_DTYPE_F32) {
        const auto *x = static_cast<const float *>(a.x);
        cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r)
                a.out[r] = int32_t(argmax_row(x + r * ldx, a.cols));
        });
        return PAGODA_OK;
    }
    const auto *x = static_cast<const uint16_t *>(a.x);
    std::atomic<bool> out_of_memory{false};
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
        float *row = RowAreas{&out_of_memory}.get(size_t(a.cols));
        if (row == nullptr) return;
        for (int64_t r = begin; r < end; ++r) {
            widen_to_f32(cpu.features(), x + r * ldx, dtype, a.cols, row);
            a.out[r] = int32_t(argmax_row(row, a.cols));
        }
    });
    return out_of_memory ? no_memory(cpu, "argmax", a.cols) : PAGODA_OK;
}

pagoda_status_t run_softmax(CpuBackend &cpu, const pagoda_op_softmax_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "softmax", "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "softmax", "out", a.out));
    const int64_t ldx = plugin::packed_or(a.ldx, a.cols), ldo = plugin::packed_or(a.ldo, a.cols);
    const float scale = a.scale == 0.0f ? 1.0f : a.scale;
    const pagoda_dtype_t dtype = plugin::act_dtype_of(a.act_dtype);
    if (dtype == PAGODA_DTYPE_F32) {
        const auto *x = static_cast<const float *>(a.x);
        auto *out = static_cast<float *>(a.out);
        cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r)
                softmax_row(x + r * ldx, out + r * ldo, a.cols, scale);
        });
        return PAGODA_OK;
    }
    // The row is widened before any of it is written, so out may alias x here too.
    const auto *x = static_cast<const uint16_t *>(a.x);
    auto *out = static_cast<uint16_t *>(a.out);
    std::atomic<bool> out_of_memory{false};
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.cols), [&](int64_t begin, int64_t end) {
        float *row = RowAreas{&out_of_memory}.get(size_t(a.cols));
        if (row == nullptr) return;
        for (int64_t r = begin; r < end; ++r) {
            widen_to_f32(cpu.features(), x + r * ldx, dtype, a.cols, row);
            softmax_row(row, row, a.cols, scale);
            narrow_from_f32(cpu.features(), row, dtype, a.cols, out + r * ldo);
        }
    });
    return out_of_memory ? no_memory(cpu, "softmax", a.cols) : PAGODA_OK;
}

}  // namespace pagoda::cpu
