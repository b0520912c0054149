// PAGODA_OP_ROPE: rotary position embedding (Su et al., RoFormer, arXiv:2104.09864, Eq. 34), in
// place, with Hugging Face's half-split or GPT-J's interleaved pairing. The arithmetic lives in
// rope_rotation.cpp, shared with KV_WRITE's fused key rotation.
//
// The frequency table is built once per launch; each token's cos/sin are computed once and
// shared by all its heads.
#include <algorithm>
#include <vector>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "rope_rotation.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "rope";

// Frequencies handled per block, so each thread's cos/sin scratch lives on its stack.
constexpr int64_t kPairsPerBlock = 128;

struct Rotation {
    const pagoda_op_rope_t *a;
    const double *inv_freq;
    int64_t pairs;
    int64_t token_stride;
};

// Rotates pairs [p0, p0 + n) of every head of token t.
void rotate_block(const Rotation &r, int64_t t, int64_t p0, int64_t n) {
    float cos_t[kPairsPerBlock], sin_t[kPairsPerBlock];
    rope_angles(r.a->positions[t], r.inv_freq + p0, n, cos_t, sin_t);
    float *token = static_cast<float *>(r.a->x) + t * r.token_stride;
    for (int64_t h = 0; h < r.a->n_heads; ++h) {
        float *x = token + h * r.a->head_dim;
        rope_rotate_head(r.a->layout, r.pairs, x, x, p0, n, cos_t, sin_t);
    }
}

}  // namespace

pagoda_status_t run_rope(CpuBackend &cpu, const pagoda_op_rope_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "positions", a.positions));
    std::vector<double> inv_freq;
    PAGODA_PLUGIN_CHECK(rope_inverse_frequencies(cpu, kOp, "", a, inv_freq));
    const int64_t rot_dim = rope_rot_dim(a), pairs = rot_dim / 2;
    const Rotation r{&a, inv_freq.data(), pairs,
                     plugin::packed_or(a.token_stride, a.n_heads * a.head_dim)};
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
