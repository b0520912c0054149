// PAGODA_OP_RMSNORM, optionally fused with the residual add before it:
//   residual += x;  out = residual / sqrt(mean(residual²) + eps) · weight
// Each element is read and written at its own index only, so `out` may alias `x` or `residual`.
#include <cmath>

#include "check_helpers.hpp"
#include "half.hpp"
#include "kernels.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "rmsnorm";

struct Rows {
    int64_t dim;
    float eps;
    const float *x;
    int64_t ldx;
    float *residual;  // or nullptr
    int64_t ld_residual;
    const void *weight;
    float *out;
    int64_t ldo;
};

template <pagoda_dtype_t D>
inline float weight_at(const void *w, int64_t i) {
    if constexpr (D == PAGODA_DTYPE_BF16)
        return bf16_to_f32(static_cast<const uint16_t *>(w)[i]);
    else if constexpr (D == PAGODA_DTYPE_F16)
        return f16_to_f32(static_cast<const uint16_t *>(w)[i]);
    else
        return static_cast<const float *>(w)[i];
}

// Sum of squares of v[0..n) in double: a long row of similar squares loses digits in f32.
inline double sum_squares(const float *v, int64_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += double(v[i]) * v[i];
        s1 += double(v[i + 1]) * v[i + 1];
        s2 += double(v[i + 2]) * v[i + 2];
        s3 += double(v[i + 3]) * v[i + 3];
    }
    for (; i < n; ++i) s0 += double(v[i]) * v[i];
    return (s0 + s1) + (s2 + s3);
}

template <pagoda_dtype_t D>
void normalise_rows(const Rows &r, int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
        const float *x = r.x + row * r.ldx;
        const float *src = x;  // what gets normalised
        if (r.residual != nullptr) {
            float *res = r.residual + row * r.ld_residual;
            for (int64_t i = 0; i < r.dim; ++i) res[i] += x[i];
            src = res;
        }
        const float inv_rms =
            float(1.0 / std::sqrt(sum_squares(src, r.dim) / double(r.dim) + double(r.eps)));
        float *out = r.out + row * r.ldo;
        for (int64_t i = 0; i < r.dim; ++i) out[i] = src[i] * inv_rms * weight_at<D>(r.weight, i);
    }
}

}  // namespace

pagoda_status_t run_rmsnorm(CpuBackend &cpu, const pagoda_op_rmsnorm_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "weight", a.weight));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "out", a.out));
    const Rows r{a.dim,
                 a.eps,
                 static_cast<const float *>(a.x),
                 plugin::packed_or(a.ldx, a.dim),
                 static_cast<float *>(a.residual),
                 plugin::packed_or(a.ld_residual, a.dim),
                 a.weight,
                 static_cast<float *>(a.out),
                 plugin::packed_or(a.ldo, a.dim)};
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        switch (a.weight_dtype) {
            case PAGODA_DTYPE_BF16:
                normalise_rows<PAGODA_DTYPE_BF16>(r, begin, end);
                break;
            case PAGODA_DTYPE_F16:
                normalise_rows<PAGODA_DTYPE_F16>(r, begin, end);
                break;
            default:
                normalise_rows<PAGODA_DTYPE_F32>(r, begin, end);
                break;
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
