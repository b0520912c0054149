// PAGODA_OP_ROPE: rotary position embedding (Su et al., RoFormer, arXiv:2104.09864, Eq. 34), in
// place, with Hugging Face's half-split or GPT-J's interleaved pairing. The arithmetic lives in
// rope_rotation.cpp, shared with KV_WRITE's fused key rotation.
//
// The frequency table is built once per launch; each token's cos/sin are computed once and
// shared by all its heads. BF16/F16 heads are widened a block of pairs at a time into f32,
// rotated by the same f32 code as f32 heads, and rounded back once.
#include <algorithm>
#include <vector>

#include "check_helpers.hpp"
#include "half.hpp"
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

// The head's element holding the first (`second` = 0) or second member of pair p.
inline int64_t pair_element(pagoda_rope_layout_t layout, int64_t pairs, int64_t p, int second) {
    return layout == PAGODA_ROPE_HALF_SPLIT ? p + second * pairs : 2 * p + second;
}

// Rotates pairs [p0, p0 + n) of one head stored as A (BF16 or F16) in place: the pairs are
// widened into `work` as a half-split head of n pairs, rotated, and rounded back.
template <pagoda_dtype_t A>
void rotate_head_16(pagoda_rope_layout_t layout, int64_t pairs, void *head, int64_t p0, int64_t n,
                    const float *cos_t, const float *sin_t) {
    float work[2 * kPairsPerBlock];
    for (int64_t i = 0; i < n; ++i)
        for (int second = 0; second < 2; ++second)
            work[i + second * n] = load_as_f32<A>(head, pair_element(layout, pairs, p0 + i, second));
    rope_rotate_head(PAGODA_ROPE_HALF_SPLIT, n, work, work, 0, n, cos_t, sin_t);
    for (int64_t i = 0; i < n; ++i)
        for (int second = 0; second < 2; ++second)
            store_from_f32<A>(head, pair_element(layout, pairs, p0 + i, second),
                              work[i + second * n]);
}

// Rotates pairs [p0, p0 + n) of every head of token t; A is the type of x.
template <pagoda_dtype_t A>
void rotate_block(const Rotation &r, int64_t t, int64_t p0, int64_t n) {
    float cos_t[kPairsPerBlock], sin_t[kPairsPerBlock];
    rope_angles(r.a->positions[t], r.inv_freq + p0, n, cos_t, sin_t);
    if constexpr (A == PAGODA_DTYPE_F32) {
        float *token = static_cast<float *>(r.a->x) + t * r.token_stride;
        for (int64_t h = 0; h < r.a->n_heads; ++h) {
            float *x = token + h * r.a->head_dim;
            rope_rotate_head(r.a->layout, r.pairs, x, x, p0, n, cos_t, sin_t);
        }
    } else {
        uint16_t *token = static_cast<uint16_t *>(r.a->x) + t * r.token_stride;
        for (int64_t h = 0; h < r.a->n_heads; ++h)
            rotate_head_16<A>(r.a->layout, r.pairs, token + h * r.a->head_dim, p0, n, cos_t,
                              sin_t);
    }
}

template <pagoda_dtype_t A>
void rotate_tokens(const Rotation &r, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
        for (int64_t p0 = 0; p0 < r.pairs; p0 += kPairsPerBlock)
            rotate_block<A>(r, t, p0, std::min(kPairsPerBlock, r.pairs - p0));
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
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);
    cpu.pool().parallel_for(a.n_tokens, grain, [&](int64_t begin, int64_t end) {
        switch (act) {
            case PAGODA_DTYPE_BF16: rotate_tokens<PAGODA_DTYPE_BF16>(r, begin, end); break;
            case PAGODA_DTYPE_F16: rotate_tokens<PAGODA_DTYPE_F16>(r, begin, end); break;
            default: rotate_tokens<PAGODA_DTYPE_F32>(r, begin, end); break;
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
