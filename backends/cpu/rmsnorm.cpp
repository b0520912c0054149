// PAGODA_OP_RMSNORM, optionally fused with the residual add before it:
//   residual += x;  out = residual / sqrt(mean(residual²) + eps) · weight
// Each element is read and written at its own index only, so `out` may alias `x` or `residual`.
// x and out are of act_dtype (widened on load, rounded once on store); the residual stays f32.
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
    const void *x;  // act_dtype
    int64_t ldx;
    float *residual;  // or nullptr
    int64_t ld_residual;
    const void *weight;
    void *out;  // act_dtype
    int64_t ldo;
};

// Sum of squares of v[0..n) (of type V) in double: a long row of similar squares loses digits
// in f32.
template <pagoda_dtype_t V>
inline double sum_squares(const void *v, int64_t n) {
    auto sq = [v](int64_t i) {
        const double e = load_as_f32<V>(v, i);
        return e * e;
    };
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += sq(i);
        s1 += sq(i + 1);
        s2 += sq(i + 2);
        s3 += sq(i + 3);
    }
    for (; i < n; ++i) s0 += sq(i);
    return (s0 + s1) + (s2 + s3);
}

// A = the activations' type, W = the weight's.
template <pagoda_dtype_t A, pagoda_dtype_t W>
void normalise_rows(const Rows &r, int64_t begin, int64_t end) {
    const int64_t act_bytes = A == PAGODA_DTYPE_F32 ? 4 : 2;
    for (int64_t row = begin; row < end; ++row) {
        const void *x = static_cast<const char *>(r.x) + row * r.ldx * act_bytes;
        void *out = static_cast<char *>(r.out) + row * r.ldo * act_bytes;
        if (r.residual != nullptr) {
            float *res = r.residual + row * r.ld_residual;
            for (int64_t i = 0; i < r.dim; ++i) res[i] += load_as_f32<A>(x, i);
            const float inv_rms = float(
                1.0 / std::sqrt(sum_squares<PAGODA_DTYPE_F32>(res, r.dim) / double(r.dim) +
                                double(r.eps)));
            for (int64_t i = 0; i < r.dim; ++i)
                store_from_f32<A>(out, i, res[i] * inv_rms * load_as_f32<W>(r.weight, i));
        } else {
            const float inv_rms =
                float(1.0 / std::sqrt(sum_squares<A>(x, r.dim) / double(r.dim) + double(r.eps)));
            for (int64_t i = 0; i < r.dim; ++i)
                store_from_f32<A>(out, i,
                                  load_as_f32<A>(x, i) * inv_rms * load_as_f32<W>(r.weight, i));
        }
    }
}

template <pagoda_dtype_t A>
void normalise_rows_of(const Rows &r, pagoda_dtype_t weight_dtype, int64_t begin, int64_t end) {
    switch (weight_dtype) {
        case PAGODA_DTYPE_BF16: normalise_rows<A, PAGODA_DTYPE_BF16>(r, begin, end); break;
        case PAGODA_DTYPE_F16: normalise_rows<A, PAGODA_DTYPE_F16>(r, begin, end); break;
        default: normalise_rows<A, PAGODA_DTYPE_F32>(r, begin, end); break;
    }
}

}  // namespace

pagoda_status_t run_rmsnorm(CpuBackend &cpu, const pagoda_op_rmsnorm_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "weight", a.weight));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "out", a.out));
    const Rows r{a.dim,
                 a.eps,
                 a.x,
                 plugin::packed_or(a.ldx, a.dim),
                 static_cast<float *>(a.residual),
                 plugin::packed_or(a.ld_residual, a.dim),
                 a.weight,
                 a.out,
                 plugin::packed_or(a.ldo, a.dim)};
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        switch (act) {
            case PAGODA_DTYPE_BF16:
                normalise_rows_of<PAGODA_DTYPE_BF16>(r, a.weight_dtype, begin, end);
                break;
            case PAGODA_DTYPE_F16:
                normalise_rows_of<PAGODA_DTYPE_F16>(r, a.weight_dtype, begin, end);
                break;
            default:
                normalise_rows_of<PAGODA_DTYPE_F32>(r, a.weight_dtype, begin, end);
                break;
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
