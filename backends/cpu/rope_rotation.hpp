// The arithmetic of rotary position embedding (Su et al., RoFormer, arXiv:2104.09864, Eq. 34),
// shared by PAGODA_OP_ROPE (rope.cpp) and KV_WRITE's fused key rotation (kv_write.cpp) so that
// the fused form stores exactly the keys that ROPE followed by KV_WRITE stores: the same
// frequency table, the same angles and the same f32 expressions, compiled once.
//
// Frequencies are built in double, and angles are position · inv_freq in double too: at
// position 128k an f32 angle is off by ~0.004 rad, a visible error in attention.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "pagoda/ops.h"

namespace pagoda::cpu {

// Rotated elements per head of a checked descriptor (0 means head_dim).
inline int64_t rope_rot_dim(const pagoda_op_rope_t &a) {
    return a.rot_dim == 0 ? a.head_dim : a.rot_dim;
}

// The launch-time half of a rotation that passed plugin::check_rope_rotation: checks that every
// freq_factors entry is finite and positive, then fills `inv_freq` with the rot_dim / 2 scaled
// inverse frequencies. Messages read "<op>: <field_prefix>freq_factors[i] = ...".
pagoda_status_t rope_inverse_frequencies(CpuBackend &cpu, const char *op,
                                         const char *field_prefix, const pagoda_op_rope_t &a,
                                         std::vector<double> &inv_freq);

// cos_t[i], sin_t[i] = cos, sin of position · inv_freq[i] for i in [0, n), rounded to f32.
void rope_angles(int32_t position, const double *inv_freq, int64_t n, float *cos_t,
                 float *sin_t);

// Rotates pairs [p0, p0 + n) of one head read from `src` and written to `dst` (which may be
// `src`; other elements of `dst` are left alone). `pairs` is rot_dim / 2; cos_t[i] and sin_t[i]
// belong to pair p0 + i.
void rope_rotate_head(pagoda_rope_layout_t layout, int64_t pairs, const float *src, float *dst,
                      int64_t p0, int64_t n, const float *cos_t, const float *sin_t);

}  // namespace pagoda::cpu
