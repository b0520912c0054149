// The int8 route's portable build (gemv_q8x.hpp): plain loops, one block decoded to int8 runs
// at a time. The AVX2 build is gemv_q8x_avx2.cpp.
#include "gemv_q8x.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_formats.hpp"
#include "row_groups.hpp"

namespace pagoda::cpu {

namespace {

// Blocks as int8 runs: value = scale · q − min per run of 32, a scale per 16 values and a min
// per run, computed as src/formats/block_formats.cpp's reference decoders compute them.
inline void set_run_scale(float *scale, float *min, int64_t run, float s, float m) {
    scale[2 * run] = s;
    scale[2 * run + 1] = s;
    min[run] = m;
}

void unpack_q8_0(const unsigned char *block, int8_t *q, float *scale, float *min) {
    std::memcpy(q, block + 2, 32);
    set_run_scale(scale, min, 0, formats::half_at_bytes(block), 0.0f);
}

void unpack_q4_0(const unsigned char *block, int8_t *q, float *scale, float *min) {
    const unsigned char *qs = block + 2;
    for (int j = 0; j < 16; ++j) {
        q[j] = int8_t((qs[j] & 0x0F) - 8);
        q[j + 16] = int8_t((qs[j] >> 4) - 8);
    }
    set_run_scale(scale, min, 0, formats::half_at_bytes(block), 0.0f);
}

// Q4_K and Q5_K: 8 runs; `qh` (Q5_K's fifth bits) or nullptr.
void unpack_k_mins(const unsigned char *block, const unsigned char *qh, const unsigned char *qs,
                   int8_t *q, float *scale, float *min) {
    const float d = formats::half_at_bytes(block), dmin = formats::half_at_bytes(block + 2);
    const unsigned char *packed = block + 4;
    for (int pair = 0; pair < 4; ++pair, qs += 32, q += 64) {
        for (int l = 0; l < 32; ++l) {
            q[l] = int8_t(qs[l] & 0x0F);
            q[l + 32] = int8_t(qs[l] >> 4);
        }
        if (qh != nullptr) {
            const int shift0 = 2 * pair, shift1 = 2 * pair + 1;
            for (int l = 0; l < 32; ++l) {
                q[l] = int8_t(q[l] + (((qh[l] >> shift0) & 1) << 4));
                q[l + 32] = int8_t(q[l + 32] + (((qh[l] >> shift1) & 1) << 4));
            }
        }
        for (int half = 0; half < 2; ++half) {
            float sc, mn;
            formats::scale_and_min(packed, 2 * pair + half, &sc, &mn);
            set_run_scale(scale, min, 2 * pair + half, d * sc, dmin * mn);
        }
    }
}

// Q6_K: runs are the quarters of each half (block_formats.cpp's q0..q3), each with two scales.
void unpack_q6_k(const unsigned char *block, int8_t *q, float *scale, float *min) {
    const unsigned char *ql = block, *qh = block + 128;
    const auto *sc = reinterpret_cast<const int8_t *>(block + 192);
    const float d = formats::half_at_bytes(block + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, q += 128) {
        for (int l = 0; l < 32; ++l) {
            q[l] = int8_t(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = int8_t(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
        for (int quarter = 0; quarter < 4; ++quarter) {
            const int64_t run = 4 * half + quarter;
            scale[2 * run] = d * float(sc[2 * quarter]);
            scale[2 * run + 1] = d * float(sc[2 * quarter + 1]);
            min[run] = 0.0f;
        }
    }
}

void unpack_blocks(pagoda_dtype_t dtype, const unsigned char *src, int64_t blocks, int8_t *q,
                   float *scale, float *min) {
    const formats::BlockShape b = formats::block_shape(dtype);
    const int64_t runs = b.elements / kQ8Run;
    for (int64_t i = 0; i < blocks;
         ++i, src += b.bytes, q += b.elements, scale += 2 * runs, min += runs) {
        switch (dtype) {
            case PAGODA_DTYPE_Q8_0: unpack_q8_0(src, q, scale, min); break;
            case PAGODA_DTYPE_Q4_0: unpack_q4_0(src, q, scale, min); break;
            case PAGODA_DTYPE_Q4_K: unpack_k_mins(src, nullptr, src + 16, q, scale, min); break;
            case PAGODA_DTYPE_Q5_K: unpack_k_mins(src, src + 16, src + 48, q, scale, min); break;
            case PAGODA_DTYPE_Q6_K: unpack_q6_k(src, q, scale, min); break;
            default: return;
        }
    }
}

}  // namespace

int64_t q8x_max_rows(pagoda_dtype_t w_dtype, bool avx512) {
    switch (w_dtype) {
        case PAGODA_DTYPE_Q8_0: return avx512 ? 16 : 8;
        case PAGODA_DTYPE_Q6_K: return 4;
        case PAGODA_DTYPE_Q4_0:
        case PAGODA_DTYPE_Q4_K:
        case PAGODA_DTYPE_Q5_K: return 2;
        default: return 0;
    }
}

// Where the tiled builds take over (gemv_q8x.hpp): the AVX-512 one from the m where it passed the
// row-at-a-time build, to every m; the AVX2 one from 2 rows up to the m past which the rules
// send products to sgemm (matmul.cpp's kGemvMaxM), which led it at prefill sizes.
constexpr int64_t kTilesMinRowsAvx512 = 6, kTilesMinRowsAvx2 = 2, kTilesMaxRowsAvx2 = 64;

bool q8x_tiles_serve(pagoda_dtype_t w_dtype, int64_t m, int64_t k, bool avx2, bool avx512) {
    if (w_dtype != PAGODA_DTYPE_Q8_0 || k % (8 * kQ8Run) != 0) return false;
    if (avx512) return m >= kTilesMinRowsAvx512;
    return avx2 && m >= kTilesMinRowsAvx2 && m <= kTilesMaxRowsAvx2;
}

void quantize_rows_portable(const float *x, int64_t ldx, int64_t m, int64_t k, int8_t *q,
                            float *scale, float *sum) {
    const int64_t runs = k / kQ8Run;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t r = 0; r < runs; ++r) {
            const float *v = x + i * ldx + r * kQ8Run;
            int8_t *out = q + i * k + r * kQ8Run;
            float amax = 0.0f;
            for (int64_t c = 0; c < kQ8Run; ++c) amax = std::max(amax, std::fabs(v[c]));
            const float d = amax / 127.0f;
            int total = 0;
            for (int64_t c = 0; c < kQ8Run; ++c) {
                out[c] = d == 0.0f ? int8_t(0) : int8_t(std::nearbyint(v[c] / d));
                total += out[c];
            }
            scale[i * runs + r] = d;
            sum[i * runs + r] = d * float(total);
        }
    }
}

void gemv_q8x_portable(const GemvProblem &p, const Q8Rows &x, int64_t row_begin, int64_t row_end) {
    const formats::BlockShape b = formats::block_shape(p.w_dtype);
    const int64_t runs_per_block = b.elements / kQ8Run, x_runs = p.k / kQ8Run;
    int8_t q[256];
    float scale[2 * 8], min[8];
    // Each W row meets every x row while it is in cache (as the AVX2 build's tiles do).
    for (int64_t j = row_begin; j < row_end; ++j) {
        for (int64_t i = 0; i < p.m; ++i) {
            const int8_t *xq = x.q + i * p.k;
            const float *xd = x.scale + i * x_runs, *xs = x.sum + i * x_runs;
            const unsigned char *block = static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
            float acc = 0.0f;
            for (int64_t c0 = 0; c0 < p.k; c0 += b.elements, block += b.bytes) {
                unpack_blocks(p.w_dtype, block, 1, q, scale, min);
                for (int64_t t = 0; t < runs_per_block; ++t) {
                    const int64_t run = c0 / kQ8Run + t;
                    int lo = 0, hi = 0;
                    const int8_t *wr = q + t * kQ8Run, *xr = xq + run * kQ8Run;
                    for (int c = 0; c < 16; ++c) lo += int(wr[c]) * int(xr[c]);
                    for (int c = 16; c < 32; ++c) hi += int(wr[c]) * int(xr[c]);
                    acc += xd[run] * (scale[2 * t] * float(lo) + scale[2 * t + 1] * float(hi));
                    acc -= min[t] * xs[run];
                }
            }
            store_output(p, i, j, acc);
        }
    }
}

}  // namespace pagoda::cpu
