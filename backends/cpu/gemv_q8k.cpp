// The whole-block int8 route's portable build (gemv_q8k.hpp): plain loops on one block decoded
// to its integer parts at a time. The AVX2 build is gemv_q8k_avx2.cpp.
#include "gemv_q8k.hpp"

#include <algorithm>
#include <cmath>

#include "block_formats.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

// A K block in integers: value c = d · group_scale[c/16] · (u[c] − offset) − dmin · run_min[c/32].
struct IntBlock {
    uint8_t u[kQ8Block];
    int group_scale[16], run_min[8];
    int offset;
    float d, dmin;
};

// Q4_K and Q5_K (`qh`: Q5_K's fifth bits, or nullptr): run t is sub-block t.
void unpack_k_mins(const unsigned char *block, const unsigned char *qh, const unsigned char *qs,
                   IntBlock &out) {
    out.d = formats::half_at_bytes(block);
    out.dmin = formats::half_at_bytes(block + 2);
    out.offset = 0;
    for (int t = 0; t < 8; ++t) {
        float sc, mn;
        formats::scale_and_min(block + 4, t, &sc, &mn);
        out.group_scale[2 * t] = out.group_scale[2 * t + 1] = int(sc);
        out.run_min[t] = int(mn);
        const unsigned char *pair = qs + 32 * (t / 2);
        for (int l = 0; l < 32; ++l) {
            int v = (t % 2 == 0 ? pair[l] & 0x0F : pair[l] >> 4);
            if (qh != nullptr) v |= ((qh[l] >> t) & 1) << 4;
            out.u[32 * t + l] = uint8_t(v);
        }
    }
}

// Q6_K: stored values 0..63 (the weight plus 32); run t is quarter t % 4 of half t / 4, as in
// block_formats.cpp's decoder, with a scale per 16.
void unpack_q6_k(const unsigned char *block, IntBlock &out) {
    out.d = formats::half_at_bytes(block + 208);
    out.dmin = 0.0f;
    out.offset = 32;
    const auto *sc = reinterpret_cast<const int8_t *>(block + 192);
    for (int g = 0; g < 16; ++g) out.group_scale[g] = sc[g];
    for (int t = 0; t < 8; ++t) out.run_min[t] = 0;
    for (int half = 0; half < 2; ++half) {
        const unsigned char *ql = block + 64 * half, *qh = block + 128 + 32 * half;
        uint8_t *u = out.u + 128 * half;
        for (int l = 0; l < 32; ++l) {
            u[l] = uint8_t((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4));
            u[l + 32] = uint8_t((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
            u[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            u[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
}

void unpack(pagoda_dtype_t dtype, const unsigned char *block, IntBlock &out) {
    switch (dtype) {
        case PAGODA_DTYPE_Q4_K: return unpack_k_mins(block, nullptr, block + 16, out);
        case PAGODA_DTYPE_Q5_K: return unpack_k_mins(block, block + 16, block + 48, out);
        default: return unpack_q6_k(block, out);
    }
}

}  // namespace

bool q8k_serves(pagoda_dtype_t w_dtype) {
    return w_dtype == PAGODA_DTYPE_Q4_K || w_dtype == PAGODA_DTYPE_Q5_K ||
           w_dtype == PAGODA_DTYPE_Q6_K;
}

int64_t q8k_max_rows(pagoda_dtype_t w_dtype) { return q8k_serves(w_dtype) ? 16 : 0; }

void quantize_blocks_portable(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                              float *scale, int16_t *sum) {
    const int64_t blocks = k / kQ8Block;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t b = 0; b < blocks; ++b) {
            const float *v = x + i * ldx + b * kQ8Block;
            int8_t *out = q + i * k + b * kQ8Block;
            float amax = 0.0f;
            for (int64_t c = 0; c < kQ8Block; ++c) amax = std::max(amax, std::fabs(v[c]));
            const float d = amax / 127.0f;
            for (int64_t c = 0; c < kQ8Block; ++c)
                out[c] = d == 0.0f ? int8_t(0) : int8_t(std::nearbyint(v[c] / d));
            scale[i * blocks + b] = d;
            for (int64_t g = 0; g < kQ8Block / kQ8Group; ++g) {
                int total = 0;
                for (int64_t c = 0; c < kQ8Group; ++c) total += out[g * kQ8Group + c];
                sum[(i * k + b * kQ8Block) / kQ8Group + g] = int16_t(total);
            }
        }
}

void gemv_q8k_portable(const GemvProblem &p, const Q8BlockRows &x, int64_t row_begin,
                       int64_t row_end) {
    const int64_t blocks = p.k / kQ8Block;
    IntBlock w;
    // Each W row meets every x row while it is in cache (as the AVX2 build's tiles do).
    for (int64_t j = row_begin; j < row_end; ++j)
        for (int64_t i = 0; i < p.m; ++i) {
            const auto *block = static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
            float acc = 0.0f;
            for (int64_t b = 0; b < blocks; ++b, block += p.w_block_bytes) {
                unpack(p.w_dtype, block, w);
                const int8_t *xq = x.q + i * p.k + b * kQ8Block;
                const int16_t *xs = x.sum + (i * p.k + b * kQ8Block) / kQ8Group;
                int32_t products = 0, mins = 0, offsets = 0;
                for (int g = 0; g < 16; ++g) {
                    int32_t group = 0;
                    for (int c = 0; c < 16; ++c) group += int32_t(w.u[16 * g + c]) * xq[16 * g + c];
                    products += w.group_scale[g] * group;
                    offsets += w.group_scale[g] * xs[g];
                }
                for (int t = 0; t < 8; ++t) mins += w.run_min[t] * (xs[2 * t] + xs[2 * t + 1]);
                const float dx = x.scale[i * blocks + b];
                acc += w.d * dx * float(products - w.offset * offsets);
                acc -= w.dmin * dx * float(mins);
            }
            store_output(p, i, j, acc);
        }
}

}  // namespace pagoda::cpu
