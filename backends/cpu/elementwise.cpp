// PAGODA_OP_SILU_MUL (the gated FFN's activation) and PAGODA_OP_ADD. Each output element depends
// only on the inputs at its own index, so outputs may alias inputs.
#include <cmath>

#include "check_helpers.hpp"
#include "kernels.hpp"

namespace pagoda::cpu {

namespace {

// silu(z) = z / (1 + e^-z); for z → -∞ e^-z overflows to inf and the quotient is the right -0.
inline float silu(float z) { return z / (1.0f + std::exp(-z)); }

// Elements worth a chunk of ADD: it is a streaming pass, so chunks must be large.
constexpr int64_t kAddGrain = 1 << 16;

}  // namespace

pagoda_status_t run_silu_mul(CpuBackend &cpu, const pagoda_op_silu_mul_t &a) {
    constexpr const char *op = "silu_mul";
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "gate", a.gate));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "up", a.up));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "out", a.out));
    const int64_t ld_in = plugin::packed_or(a.ld_in, a.dim), ldo = plugin::packed_or(a.ldo, a.dim);
    const auto *gate = static_cast<const float *>(a.gate);
    const auto *up = static_cast<const float *>(a.up);
    auto *out = static_cast<float *>(a.out);
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float *g = gate + r * ld_in, *u = up + r * ld_in;
            float *o = out + r * ldo;
            for (int64_t i = 0; i < a.dim; ++i) o[i] = silu(g[i]) * u[i];
        }
    });
    return PAGODA_OK;
}

pagoda_status_t run_add(CpuBackend &cpu, const pagoda_op_add_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "a", a.a));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "b", a.b));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "out", a.out));
    const auto *x = static_cast<const float *>(a.a);
    const auto *y = static_cast<const float *>(a.b);
    auto *out = static_cast<float *>(a.out);
    cpu.pool().parallel_for(a.n, kAddGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = x[i] + y[i];
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
