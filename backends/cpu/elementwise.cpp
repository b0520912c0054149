// PAGODA_OP_SILU_MUL (the gated FFN's activation: SiLU, or GELU's tanh form since ABI 1.8) and
// PAGODA_OP_ADD. Each output element depends only on the inputs at its own index, so outputs may
// alias inputs. Activations of act_dtype are widened to f32 per element and each result rounded
// once (ops.h); the f32 forms are plain float loops.
#include <cmath>

#include "check_helpers.hpp"
#include "half.hpp"
#include "kernels.hpp"

namespace pagoda::cpu {

namespace {

// silu(z) = z / (1 + e^-z); for z → -∞ e^-z overflows to inf and the quotient is the right -0.
inline float silu(float z) { return z / (1.0f + std::exp(-z)); }

// gelu(z) ≈ z/2 · (1 + tanh u) with u = √(2/π)·(z + 0.044715·z³) (Hendrycks & Gimpel 2016),
// computed as z / (1 + e^(−2u)), the same value since (1 + tanh u)/2 = 1/(1 + e^(−2u)): there
// 1 + tanh u does not cancel for negative z, and z → −∞ gives −0 as silu does.
inline float gelu_tanh(float z) {
    const float u = 0.7978845608028654f * (z + 0.044715f * z * z * z);
    return z / (1.0f + std::exp(-2.0f * u));
}

// Elements worth a chunk of ADD: it is a streaming pass, so chunks must be large.
constexpr int64_t kAddGrain = 1 << 16;

// Runs Kernel<A>::run(args...) with A the activation type `act` (F32, BF16 or F16, checked).
template <template <pagoda_dtype_t> class Kernel, typename... Args>
void with_act_type(pagoda_dtype_t act, Args &&...args) {
    switch (act) {
        case PAGODA_DTYPE_BF16: Kernel<PAGODA_DTYPE_BF16>::run(args...); break;
        case PAGODA_DTYPE_F16: Kernel<PAGODA_DTYPE_F16>::run(args...); break;
        default: Kernel<PAGODA_DTYPE_F32>::run(args...); break;
    }
}

struct SiluMulRows {
    const void *gate, *up;
    int64_t ld_in;
    void *out;
    int64_t ldo, dim;
    int32_t activation;  // a pagoda_glu_activation_t, checked
};

// The activation is a template parameter so that each loop calls it without a branch.
template <pagoda_dtype_t A, float (*Act)(float)>
void glu_rows(const SiluMulRows &s, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
        const int64_t in = r * s.ld_in, o = r * s.ldo;
        for (int64_t i = 0; i < s.dim; ++i)
            store_from_f32<A>(s.out, o + i,
                              Act(load_as_f32<A>(s.gate, in + i)) * load_as_f32<A>(s.up, in + i));
    }
}

template <pagoda_dtype_t A>
struct SiluMulKernel {
    static void run(const SiluMulRows &s, int64_t begin, int64_t end) {
        if (s.activation == PAGODA_GLU_GELU_TANH)
            glu_rows<A, gelu_tanh>(s, begin, end);
        else
            glu_rows<A, silu>(s, begin, end);
    }
};

template <pagoda_dtype_t A>
struct AddKernel {
    static void run(const void *x, const void *y, void *out, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            store_from_f32<A>(out, i, load_as_f32<A>(x, i) + load_as_f32<A>(y, i));
    }
};

}  // namespace

pagoda_status_t run_silu_mul(CpuBackend &cpu, const pagoda_op_silu_mul_t &a) {
    constexpr const char *op = "silu_mul";
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "gate", a.gate));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "up", a.up));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "out", a.out));
    const SiluMulRows rows{a.gate, a.up, plugin::packed_or(a.ld_in, a.dim), a.out,
                           plugin::packed_or(a.ldo, a.dim), a.dim, int32_t(a.activation)};  // checked
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);
    cpu.pool().parallel_for(a.rows, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        with_act_type<SiluMulKernel>(act, rows, begin, end);
    });
    return PAGODA_OK;
}

pagoda_status_t run_add(CpuBackend &cpu, const pagoda_op_add_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "a", a.a));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "b", a.b));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "add", "out", a.out));
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);
    cpu.pool().parallel_for(a.n, kAddGrain, [&](int64_t begin, int64_t end) {
        with_act_type<AddKernel>(act, a.a, a.b, a.out, begin, end);
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
