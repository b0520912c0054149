// PAGODA_OP_SOFTCAP (ABI 1.8): x[i] = cap · tanh(x[i] / cap) in place, Gemma 2's final-logit
// soft-capping. Half-precision values are widened a chunk at a time into an f32 buffer, capped
// there and narrowed back, so every element is computed in f32 and rounded once (ops.h).
#include "softcap.hpp"

#include <algorithm>
#include <cmath>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

// Elements widened at a time: a 4 KiB stack buffer.
constexpr int64_t kChunk = 1024;
// Elements worth a task: a vocabulary's row of logits (~32k–256k) spreads over a few threads.
constexpr int64_t kGrain = 1 << 14;

}  // namespace

void softcap_f32(float *v, int64_t n, float cap) {
    for (int64_t i = 0; i < n; ++i) v[i] = cap * std::tanh(v[i] / cap);
}

pagoda_status_t run_softcap(CpuBackend &cpu, const pagoda_op_softcap_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, "softcap", "x", a.x));
    const pagoda_dtype_t dtype = plugin::act_dtype_of(a.dtype);
    const auto elem = int64_t(formats::dtype_size(dtype));
    const CpuFeatures &features = cpu.features();
    const auto cap_f32 = features.avx2_fma_f16c ? softcap_f32_avx2 : softcap_f32;
    auto *x = static_cast<char *>(a.x);
    cpu.pool().parallel_for(a.n, kGrain, [&](int64_t begin, int64_t end) {
        float buffer[kChunk];
        for (int64_t i = begin; i < end; i += kChunk) {
            const int64_t m = std::min(kChunk, end - i);
            char *p = x + i * elem;
            if (dtype == PAGODA_DTYPE_F32) {
                cap_f32(reinterpret_cast<float *>(p), m, a.cap);
                continue;
            }
            widen_to_f32(features, p, dtype, m, buffer);
            cap_f32(buffer, m, a.cap);
            narrow_from_f32(features, buffer, dtype, m, p);
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
