// The CPU backend's kernels on quantized block weights (ABI 1.3): EMBEDDING decodes a block
// table's rows bit for bit as the reference decoders (src/formats/block_formats.cpp) do, and
// MATMUL on block W matches a double-precision product of the reference-decoded weights within
// f32 rounding: on the GEMV (every m it tiles, k over several decode chunks, strided W) and on
// sgemm (m past the switch, widened panels), with bias, accumulation and half activations. The
// blocks are random bytes with random finite f16 scales, so every bit pattern of the values
// occurs. With PAGODA_MATMUL_QUANTIZE_X (ABI 1.4) the GEMV computes from x rounded to 8 bits as
// ops.h specifies: its results match the double product of the reference weights and that
// rounded x (and differ from the exact product by far more than the tolerance, so the test
// sees which route ran) where the backend takes the leave (m ≤ 2); larger m compute exactly.
// With PAGODA_MATMUL_QUANTIZE_X_BLOCK (ABI 1.9) as well, K-type products round x per block of
// 256 (m ≤ 16), which differs from both. Runs again with isa=portable (the reference decoders
// and the int8 routes' portable builds inside the kernels) and isa=avx2 (the AVX2 builds where
// the processor would take AVX-512 ones).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "block_formats.hpp"

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "test_util.h"

namespace {

constexpr pagoda_dtype_t kBlockTypes[] = {PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_0, PAGODA_DTYPE_Q4_K,
                                          PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K};
constexpr double kTol = 2e-5;

// Byte offsets of each type's f16 scale fields (ggml's layouts).
std::vector<int> scale_offsets(pagoda_dtype_t t) {
    switch (t) {
        case PAGODA_DTYPE_Q4_K:
        case PAGODA_DTYPE_Q5_K: return {0, 2};
        case PAGODA_DTYPE_Q6_K: return {208};
        default: return {0};
    }
}

// A finite half in ±[2^-10, 2^-6): scales of the size real weights have.
uint16_t random_scale(test_rng_t *rng) {
    const uint32_t r = test_rng_next(rng);
    const uint32_t exp = 5 + r % 4, mant = (r >> 2) & 0x3ff, sign = (r >> 12) & 1;
    return uint16_t((sign << 15) | (exp << 10) | mant);
}

// `rows` rows of `ld` values of block type `t` (random bytes, scales random finite halves).
std::vector<unsigned char> random_blocks(test_rng_t *rng, pagoda_dtype_t t, int64_t rows,
                                         int64_t ld) {
    const pagoda::formats::BlockShape b = pagoda::formats::block_shape(t);
    const int64_t blocks = rows * ld / b.elements;
    std::vector<unsigned char> out(size_t(blocks * b.bytes));
    for (unsigned char &c : out) c = static_cast<unsigned char>(test_rng_next(rng));
    for (int64_t i = 0; i < blocks; ++i)
        for (int off : scale_offsets(t)) {
            const uint16_t h = random_scale(rng);
            std::memcpy(out.data() + i * b.bytes + off, &h, 2);
        }
    return out;
}

std::vector<float> decoded(pagoda_dtype_t t, const std::vector<unsigned char> &blocks) {
    const pagoda::formats::BlockShape b = pagoda::formats::block_shape(t);
    const int64_t n = int64_t(blocks.size()) / b.bytes;
    std::vector<float> out(size_t(n * b.elements));
    pagoda::formats::decode_blocks(t, blocks.data(), n, out.data());
    return out;
}

double load(pagoda_dtype_t t, const void *p, int64_t i) {
    if (t == PAGODA_DTYPE_BF16) return test_bf16_to_f32(static_cast<const uint16_t *>(p)[i]);
    if (t == PAGODA_DTYPE_F16) return test_f16_to_f32(static_cast<const uint16_t *>(p)[i]);
    return static_cast<const float *>(p)[i];
}

double unit_roundoff(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_BF16 ? std::ldexp(1.0, -8)
           : t == PAGODA_DTYPE_F16 ? std::ldexp(1.0, -11)
                                   : 0.0;
}

// Random values of an activation type, and the values kept, as doubles.
std::vector<unsigned char> random_act(test_rng_t *rng, pagoda_dtype_t t, int64_t n,
                                      std::vector<double> &kept) {
    std::vector<float> src(static_cast<size_t>(n));
    test_fill_uniform(rng, src.data(), src.size(), -1.0f, 1.0f);
    std::vector<unsigned char> out(size_t(n) * pagoda_dtype_size(t));
    kept.resize(size_t(n));
    test_convert_weights(t, src.data(), size_t(n), out.data(), kept.data());
    return out;
}

struct Case {
    int64_t m, n, k;
    pagoda_dtype_t w;
    bool strided = false, bias = false, accumulate = false;
    pagoda_dtype_t x = PAGODA_DTYPE_F32, y = PAGODA_DTYPE_F32;
    bool quantize_x = false;
    bool quantize_x_block = false;  // with quantize_x
    int32_t variant = 0;  // ops.h's `variant`: 0 rules, 1 gemv, 2 gemv_int8, 3 sgemm
};


bool is_k_type(pagoda_dtype_t w) {
    return w == PAGODA_DTYPE_Q4_K || w == PAGODA_DTYPE_Q5_K || w == PAGODA_DTYPE_Q6_K;
}

// Whether x is rounded per K block of 256 rather than per 32.
bool block_runs(const Case &c) { return c.quantize_x_block && is_k_type(c.w); }

// The backend's instruction set (its device's arch): "x86_64-avx512vnni", "x86_64-avx2" or
// "x86_64" (the portable builds).
std::string backend_arch() {
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_device_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(t->device_info(t->self, 0, &info));
    return info.arch;
}

// The CPU backend takes PAGODA_MATMUL_QUANTIZE_X's leave for up to eight x rows on Q8_0
// (sixteen with its AVX-512 build; where k is a multiple of 256, the tiled kernels: 64 with
// the AVX2 build, every m with the AVX-512 one), four on Q6_K and two on the other block types
// (gemv_q8x.hpp: where the int8 route measured faster); per K block, for up to sixteen
// (gemv_q8k.hpp).
int64_t q8x_max_rows(const Case &c) {
    if (block_runs(c)) return 16;
    const std::string arch = backend_arch();
    if (c.w == PAGODA_DTYPE_Q8_0 && c.k % 256 == 0 && arch != "x86_64")
        return arch == "x86_64-avx2" ? 64 : INT64_MAX;
    if (c.w == PAGODA_DTYPE_Q8_0) return arch == "x86_64-avx512vnni" ? 16 : 8;
    return c.w == PAGODA_DTYPE_Q6_K ? 4 : 2;
}

// Whether the product rounds x to int8: the pinned int8 route always, the rules where the
// backend takes the leave.
bool rounds_x(const Case &c) {
    return c.quantize_x && (c.variant == 2 || (c.variant == 0 && c.m <= q8x_max_rows(c)));
}

uint32_t q8x_flags(const Case &c) {
    return (c.quantize_x ? PAGODA_MATMUL_QUANTIZE_X : 0u) |
           (c.quantize_x && c.quantize_x_block ? PAGODA_MATMUL_QUANTIZE_X_BLOCK : 0u);
}

// x rounded as ops.h's PAGODA_MATMUL_QUANTIZE_X says, in place: runs of `run` values (32, or a
// K block's 256 with PAGODA_MATMUL_QUANTIZE_X_BLOCK; rows are whole runs: k is a multiple of
// every block), d = max|x| / 127 and q = x / d to nearest even, in f32; the value kept is d · q.
void round_to_q8(std::vector<double> &x, size_t run) {
    for (size_t r0 = 0; r0 < x.size(); r0 += run) {
        float amax = 0.0f;
        for (size_t c = r0; c < r0 + run; ++c) amax = std::max(amax, std::fabs(float(x[c])));
        const float d = amax / 127.0f;
        for (size_t c = r0; c < r0 + run; ++c)
            x[c] = d == 0.0f ? 0.0 : double(d) * double(std::nearbyint(float(x[c]) / d));
    }
}

void run_case(test_rng_t *rng, const Case &c) {
    const int64_t block = pagoda::formats::block_shape(c.w).elements;
    const int64_t ldw = c.strided ? c.k + block : c.k;
    const std::vector<unsigned char> w = random_blocks(rng, c.w, c.n, ldw);
    const std::vector<float> wv = decoded(c.w, w);
    std::vector<double> xv, yv;
    std::vector<unsigned char> x = random_act(rng, c.x, c.m * c.k, xv);
    std::vector<unsigned char> y = random_act(rng, c.y, c.m * c.n, yv);
    std::vector<float> bias(size_t(c.n));
    test_fill_uniform(rng, bias.data(), bias.size(), -1.0f, 1.0f);
    if (rounds_x(c)) round_to_q8(xv, block_runs(c) ? 256 : 32);

    std::vector<double> want(size_t(c.m * c.n));
    double scale = 1e-30;
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
            double s = 0, mag = 0;
            for (int64_t q = 0; q < c.k; ++q) {
                s += xv[size_t(i * c.k + q)] * double(wv[size_t(j * ldw + q)]);
                mag += std::fabs(xv[size_t(i * c.k + q)] * double(wv[size_t(j * ldw + q)]));
            }
            if (c.bias) s += bias[size_t(j)];
            if (c.accumulate) s += yv[size_t(i * c.n + j)];
            want[size_t(i * c.n + j)] = s;
            scale = std::max(scale, mag);
        }

    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    a.flags = (c.accumulate ? PAGODA_MATMUL_ACCUMULATE : 0u) | q8x_flags(c);
    a.x_dtype = c.x;
    a.w_dtype = c.w;
    a.y_dtype = c.y;
    a.m = c.m;
    a.n = c.n;
    a.k = c.k;
    a.x = x.data();
    a.w = w.data();
    a.ldw = c.strided ? ldw : 0;
    a.bias = c.bias ? bias.data() : nullptr;
    a.y = y.data();
    a.variant = c.variant;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &a));

    const double u = unit_roundoff(c.y);
    for (int64_t i = 0; i < c.m * c.n; ++i) {
        const double got = load(c.y, y.data(), i), w_ = want[size_t(i)];
        if (!(std::fabs(got - w_) <= u * std::fabs(w_) + kTol * scale))
            fail_msg("matmul %s m=%lld n=%lld k=%lld strided=%d bias=%d acc=%d q8x=%d block=%d "
                     "x=%s y=%s variant=%d: y[%lld] = %.9g, want %.9g",
                     pagoda_dtype_name(c.w), (long long)c.m, (long long)c.n, (long long)c.k,
                     c.strided, c.bias, c.accumulate, c.quantize_x, c.quantize_x_block,
                     pagoda_dtype_name(c.x),
                     pagoda_dtype_name(c.y), int(c.variant), (long long)i, got, w_);
    }
}

// Every row of a block table through EMBEDDING to f32 is the reference decoding, bit for bit;
// to bf16/f16 it is that decoding rounded once.
void embedding_decodes_exactly(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 11);
    for (pagoda_dtype_t t : kBlockTypes) {
        const int64_t dim = 2 * pagoda::formats::block_shape(t).elements, vocab = 40;
        const std::vector<unsigned char> table = random_blocks(&rng, t, vocab, dim);
        const std::vector<float> ref = decoded(t, table);
        std::vector<int32_t> ids(vocab);
        for (int32_t i = 0; i < vocab; ++i) ids[size_t(i)] = (i * 7) % int32_t(vocab);
        for (pagoda_dtype_t out_t : {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16}) {
            std::vector<unsigned char> out(size_t(vocab * dim) * pagoda_dtype_size(out_t));
            pagoda_op_embedding_t e{};
            e.struct_size = sizeof e;
            e.table_dtype = t;
            e.vocab_size = vocab;
            e.dim = dim;
            e.n_tokens = vocab;
            e.table = table.data();
            e.ids = ids.data();
            e.out = out.data();
            e.out_dtype = out_t;
            TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_EMBEDDING, &e));
            for (int64_t i = 0; i < vocab; ++i)
                for (int64_t c = 0; c < dim; ++c) {
                    const float want = ref[size_t(ids[size_t(i)] * dim + c)];
                    std::vector<double> rounded(1);
                    uint32_t bits[2];
                    test_convert_weights(out_t, &want, 1, bits, rounded.data());
                    const double got = load(out_t, out.data(), i * dim + c);
                    if (got != rounded[0] && !(std::isnan(got) && std::isnan(rounded[0])))
                        fail_msg("embedding %s to %s: row %lld value %lld = %.9g, reference %.9g",
                                 pagoda_dtype_name(t), pagoda_dtype_name(out_t), (long long)i,
                                 (long long)c, got, rounded[0]);
                }
        }
    }
}

// The GEMV (m ≤ 32): m tiled by 1-3, n over the 4-row tile, k of one block, of several blocks
// and over several 1024-value decode chunks (with a partial last one).
void matmul_gemv_shapes(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 12);
    for (pagoda_dtype_t t : kBlockTypes) {
        const int64_t b = pagoda::formats::block_shape(t).elements;
        for (int64_t m : {1, 2, 3, 4, 5, 8, 9})
            for (int64_t n : {1, 5, 13})
                for (int64_t k : {b, 3 * b, 1024 + b, 2048 + 4 * b})
                    for (int q8x : {0, 1, 2}) {
                        Case c{m, n, k, t};
                        c.quantize_x = q8x > 0;
                        c.quantize_x_block = q8x > 1;
                        run_case(&rng, c);
                    }
    }
}

// Strided W, bias and accumulation, half activations; m = 40 takes sgemm with widened panels.
void matmul_options_and_sgemm(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 13);
    const pagoda_dtype_t acts[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    int turn = 0;
    for (pagoda_dtype_t t : kBlockTypes) {
        const int64_t b = pagoda::formats::block_shape(t).elements;
        for (int64_t m : {1, 7, 40})
            for (int flags = 0; flags < 24; ++flags, ++turn) {
                Case c{m, 37, 1024 + 2 * b, t};
                c.strided = flags & 1;
                c.bias = (flags >> 1) & 1;
                c.accumulate = (flags >> 2) & 1;
                c.quantize_x = (flags >> 3) != 0;
                c.quantize_x_block = (flags >> 4) != 0;
                c.x = acts[turn % 3];
                c.y = acts[(turn / 3) % 3];
                run_case(&rng, c);
            }
    }
}

// A decode-shaped product spread over the pool's threads.
void matmul_large(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 14);
    for (pagoda_dtype_t t : kBlockTypes)
        for (int q8x : {0, 1, 2}) {
            Case c{2, 1031, 2048, t};
            c.bias = true;
            c.quantize_x = q8x > 0;
            c.quantize_x_block = q8x > 1;
            run_case(&rng, c);
        }
}

// Rounded x the kernel meets at its extremes: a run of zeros (scale 0), a run holding one
// large value among tiny ones, exact ties (x / d = n + 0.5) and values at ±max; runs of 32, and
// of 256 on the K types with PAGODA_MATMUL_QUANTIZE_X_BLOCK.
void matmul_q8x_edges(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 15);
    for (pagoda_dtype_t t : kBlockTypes)
      for (bool per_block : {false, true}) {
        const int64_t run_length = per_block && is_k_type(t) ? 256 : 32;
        const int64_t k = pagoda::formats::block_shape(t).elements *
                          (t == PAGODA_DTYPE_Q8_0 ? 8 : run_length == 256 ? 4 : 1);
        const int64_t n = 9;
        const std::vector<unsigned char> w = random_blocks(&rng, t, n, k);
        const std::vector<float> wv = decoded(t, w);
        std::vector<float> x(static_cast<size_t>(k));
        for (int64_t c = 0; c < k; ++c) {
            const int64_t run = c / run_length, at = c % run_length;
            switch (run % 4) {
                case 0: x[size_t(c)] = 0.0f; break;
                case 1: x[size_t(c)] = at == 5 ? -300.0f : 1e-6f * float(at); break;
                case 2: x[size_t(c)] = at == 0 ? 127.0f : float(at % 32) + 0.5f - 16.0f; break;
                default: x[size_t(c)] = at % 2 ? 3.25f : -3.25f; break;
            }
        }
        std::vector<double> xv(x.begin(), x.end());
        round_to_q8(xv, size_t(run_length));
        std::vector<float> y(static_cast<size_t>(n));
        pagoda_op_matmul_t a{};
        a.struct_size = sizeof a;
        a.flags = PAGODA_MATMUL_QUANTIZE_X | (per_block ? PAGODA_MATMUL_QUANTIZE_X_BLOCK : 0u);
        a.x_dtype = a.y_dtype = PAGODA_DTYPE_F32;
        a.w_dtype = t;
        a.m = 1;
        a.n = n;
        a.k = k;
        a.x = x.data();
        a.w = w.data();
        a.y = y.data();
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &a));
        for (int64_t j = 0; j < n; ++j) {
            double want = 0, mag = 1e-30;
            for (int64_t c = 0; c < k; ++c) {
                want += xv[size_t(c)] * double(wv[size_t(j * k + c)]);
                mag += std::fabs(xv[size_t(c)] * double(wv[size_t(j * k + c)]));
            }
            if (!(std::fabs(double(y[size_t(j)]) - want) <= kTol * mag))
                fail_msg("q8x edges %s per_block=%d: y[%lld] = %.9g, want %.9g",
                         pagoda_dtype_name(t), per_block, (long long)j, double(y[size_t(j)]), want);
        }
      }
}

// ABI 1.6's pinned variants on block weights: the GEMV and sgemm at every m compute exactly
// (with the leave or without), the int8 route rounds x at every m, past where the rules stop
// taking it; half activations and bias in turn.
void matmul_pinned_variants(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 16);
    const pagoda_dtype_t acts[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    int turn = 0;
    for (pagoda_dtype_t t : kBlockTypes) {
        const int64_t b = pagoda::formats::block_shape(t).elements;
        for (int32_t variant : {1, 2, 3})
            for (int64_t m : {1, 3, 9, 40})
                for (int q8x : {0, 1, 2}) {
                    if (variant == 2 && q8x == 0) continue;  // refused: see pinned_int8_needs_leave
                    Case c{m, 21, 2 * b, t};
                    c.variant = variant;
                    c.quantize_x = q8x > 0;
                    c.quantize_x_block = q8x > 1;
                    c.bias = turn % 2;
                    c.x = acts[turn % 3];
                    c.y = acts[(turn / 2) % 3];
                    ++turn;
                    run_case(&rng, c);
                }
    }
}

// The per-block int8 route pinned at prefill sizes: x in several blocks of rows, each a pass
// over W (16 rows each at k = 16384).
void matmul_int8_row_blocks(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 17);
    for (pagoda_dtype_t t : {PAGODA_DTYPE_Q4_K, PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K}) {
        Case c{40, 9, 16384, t};
        c.variant = 2;
        c.quantize_x = c.quantize_x_block = true;
        c.bias = true;
        run_case(&rng, c);
    }
}

// Q8_0 on int8 x at several rows and k a multiple of 256, where the vector builds run the tiled
// kernels (gemv_q8x_tiles_avx512.cpp, gemv_q8x_tiles_avx2.cpp): whole and partial tiles of W rows,
// more x rows than one pass takes (with the pinned int8 route), bias, accumulation, strides.
void matmul_q8x_tiles(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 18);
    int turn = 0;
    for (int64_t m : {2, 4, 5, 16, 17, 40, 70})
        for (int64_t n : {1, 3, 4, 7, 13})
            for (int64_t k : {256, 768, 2048}) {
                Case c{m, n, k, PAGODA_DTYPE_Q8_0};
                c.quantize_x = true;
                c.variant = m == 40 ? 2 : 0;
                c.bias = turn % 2;
                c.accumulate = (turn / 2) % 2;
                c.strided = (turn / 4) % 2;
                ++turn;
                run_case(&rng, c);
            }
}

// The int8 route rounds x, which only PAGODA_MATMUL_QUANTIZE_X allows.
void pinned_int8_needs_leave(void **) {
    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = a.y_dtype = PAGODA_DTYPE_F32;
    a.w_dtype = PAGODA_DTYPE_Q8_0;
    a.m = 1;
    a.n = 4;
    a.k = 32;
    a.variant = 2;
    test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_UNSUPPORTED,
                             "needs PAGODA_MATMUL_QUANTIZE_X");
    a.flags = PAGODA_MATMUL_QUANTIZE_X;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
}

// Rows that are not whole blocks are refused, naming the block; so is a block type as x or y.
void rejects_partial_blocks(void **) {
    for (pagoda_dtype_t t : kBlockTypes) {
        const int64_t b = pagoda::formats::block_shape(t).elements;
        pagoda_op_matmul_t a{};
        a.struct_size = sizeof a;
        a.x_dtype = PAGODA_DTYPE_F32;
        a.w_dtype = t;
        a.y_dtype = PAGODA_DTYPE_F32;
        a.m = 1;
        a.n = 4;
        a.k = 2 * b;
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
        a.k = b + 16;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT,
                                 "are not whole");
        a.k = b;
        a.ldw = b + 16;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT,
                                 pagoda_dtype_name(t));
        a.ldw = 0;
        a.flags = PAGODA_MATMUL_QUANTIZE_X;
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
        a.flags = PAGODA_MATMUL_QUANTIZE_X | PAGODA_MATMUL_QUANTIZE_X_BLOCK;
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
        // The wider leave widens QUANTIZE_X's; alone it is a descriptor error.
        a.flags = PAGODA_MATMUL_QUANTIZE_X_BLOCK;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT,
                                 "without PAGODA_MATMUL_QUANTIZE_X");
        a.flags = 16u;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_UNSUPPORTED, "flags");
        // Rounding W is leave for half x only (the CPU computes exactly either way).
        a.flags = PAGODA_MATMUL_ROUND_W;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT, "x_dtype f32");
        a.x_dtype = PAGODA_DTYPE_BF16;
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MATMUL, &a));
        a.x_dtype = PAGODA_DTYPE_F32;
        a.flags = 0;
        a.x_dtype = t;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_UNSUPPORTED, "x_dtype");

        pagoda_op_embedding_t e{};
        e.struct_size = sizeof e;
        e.table_dtype = t;
        e.vocab_size = 3;
        e.dim = b / 2;
        e.n_tokens = 1;
        test_cpu_expect_rejected(PAGODA_OP_EMBEDDING, &e, PAGODA_ERR_INVALID_ARGUMENT,
                                 "are not whole");
    }
}

// PAGODA_MATMUL_QUANTIZE_X on plain weights is a descriptor error.
void quantize_x_needs_block_weights(void **) {
    for (pagoda_dtype_t t : {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16}) {
        pagoda_op_matmul_t a{};
        a.struct_size = sizeof a;
        a.flags = PAGODA_MATMUL_QUANTIZE_X;
        a.x_dtype = a.y_dtype = PAGODA_DTYPE_F32;
        a.w_dtype = t;
        a.m = a.n = 1;
        a.k = 64;
        test_cpu_expect_rejected(PAGODA_OP_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT,
                                 "block-quantized");
    }
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(embedding_decodes_exactly),
        cmocka_unit_test(matmul_gemv_shapes),
        cmocka_unit_test(matmul_options_and_sgemm),
        cmocka_unit_test(matmul_large),
        cmocka_unit_test(matmul_q8x_edges),
        cmocka_unit_test(matmul_pinned_variants),
        cmocka_unit_test(matmul_int8_row_blocks),
        cmocka_unit_test(matmul_q8x_tiles),
        cmocka_unit_test(pinned_int8_needs_leave),
        cmocka_unit_test(quantize_x_needs_block_weights),
        cmocka_unit_test(rejects_partial_blocks),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
