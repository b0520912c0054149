// Soft-capping of f32 values in place, v[i] = cap · tanh(v[i] / cap) (Gemma 2): the SOFTCAP op's
// inner loop and paged attention's on its scores. The portable loop is in softcap.cpp, the
// AVX2/FMA one in softcap_avx2.cpp; both keep NaN as NaN and send ±inf to ±cap.
#pragma once

#include <cstdint>

namespace pagoda::cpu {

void softcap_f32(float *v, int64_t n, float cap);
// Needs AVX2 and FMA (CpuFeatures::avx2_fma_f16c). Within 2e-7 · cap of softcap_f32.
void softcap_f32_avx2(float *v, int64_t n, float cap);

}  // namespace pagoda::cpu
