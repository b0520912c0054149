// MOE_MATMUL (ABI 1.8) on the CPU backend against a double-precision reference: f32/bf16/f16
// activations × f32/f16/bf16/Q8_0/Q4_K experts, x per token and per slot, with and without
// routing weights, padded strides, an expert_offset with ids outside the held experts (their
// rows zeros, their weights left out of the sums), more slots than experts held, one expert
// picked by a hundred rows (past the GEMV, so sgemm runs), and ids repeated within a token.
// The held expert nobody picks, x's padding and the experts' padding are all NaN, so a result
// without NaN shows that none of them was read. A C++ test, to decode the block weights with
// the reference decoders the plugins link (src/formats). Runs again with isa=portable.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
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

constexpr double kTol = 2e-5;  // f32 sums against the magnitude of their terms
constexpr float kSentinel = -555.0f;

bool is_block(pagoda_dtype_t t) { return pagoda::formats::is_block_dtype(t); }

double load(pagoda_dtype_t t, const void *p, int64_t i) {
    if (t == PAGODA_DTYPE_BF16) return test_bf16_to_f32(static_cast<const uint16_t *>(p)[i]);
    if (t == PAGODA_DTYPE_F16) return test_f16_to_f32(static_cast<const uint16_t *>(p)[i]);
    return static_cast<const float *>(p)[i];
}

void store(pagoda_dtype_t t, void *p, int64_t i, float v) {
    if (t == PAGODA_DTYPE_BF16)
        static_cast<uint16_t *>(p)[i] = test_f32_to_bf16(v);
    else if (t == PAGODA_DTYPE_F16)
        static_cast<uint16_t *>(p)[i] = test_f32_to_f16(v);
    else
        static_cast<float *>(p)[i] = v;
}

double unit_roundoff(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_BF16 ? std::ldexp(1.0, -8)
           : t == PAGODA_DTYPE_F16 ? std::ldexp(1.0, -11)
                                   : 0.0;
}

// A finite half in ±[2^-10, 2^-6): scales of the size real weights have.
uint16_t random_scale(test_rng_t *rng) {
    const uint32_t r = uint32_t(test_rng_next(rng));
    const uint32_t exp = 5 + r % 4, mant = (r >> 2) & 0x3ff, sign = (r >> 12) & 1;
    return uint16_t((sign << 15) | (exp << 10) | mant);
}

// One expert's [n, ldw] matrix: its storage, and the values a kernel must see (columns < k).
struct Matrix {
    std::vector<unsigned char> bytes;
    std::vector<double> values;  // [n, k]
};

// Random weights of `t`, the columns past k (whole blocks for a block type) NaN. 0xFF bytes
// are NaN in every type: f32, bf16 and f16 all-ones, and a block whose f16 scale is NaN.
Matrix random_matrix(test_rng_t *rng, pagoda_dtype_t t, int64_t n, int64_t k, int64_t ldw) {
    Matrix m;
    m.values.resize(size_t(n * k));
    if (is_block(t)) {
        const pagoda::formats::BlockShape b = pagoda::formats::block_shape(t);
        const int64_t row_bytes = ldw / b.elements * b.bytes;
        m.bytes.resize(size_t(n * row_bytes));
        for (unsigned char &c : m.bytes) c = static_cast<unsigned char>(test_rng_next(rng));
        const bool q4k = t == PAGODA_DTYPE_Q4_K;
        for (size_t at = 0; at < m.bytes.size(); at += size_t(b.bytes)) {
            const uint16_t d = random_scale(rng), dmin = random_scale(rng);
            std::memcpy(&m.bytes[at], &d, 2);
            if (q4k) std::memcpy(&m.bytes[at + 2], &dmin, 2);
        }
        std::vector<float> row(static_cast<size_t>(k));
        for (int64_t j = 0; j < n; ++j) {
            unsigned char *r = m.bytes.data() + j * row_bytes;
            pagoda::formats::decode_blocks(t, r, k / b.elements, row.data());
            for (int64_t q = 0; q < k; ++q) m.values[size_t(j * k + q)] = row[size_t(q)];
            const int64_t used = k / b.elements * b.bytes;
            std::memset(r + used, 0xFF, size_t(row_bytes - used));
        }
        return m;
    }
    const size_t elem = pagoda_dtype_size(t), count = size_t(n * ldw);
    std::vector<float> src(count);
    std::vector<double> kept(count);
    test_fill_uniform(rng, src.data(), count, -1.0f, 1.0f);
    m.bytes.resize(count * elem);
    test_convert_weights(t, src.data(), count, m.bytes.data(), kept.data());
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t q = 0; q < k; ++q) m.values[size_t(j * k + q)] = kept[size_t(j * ldw + q)];
        std::memset(&m.bytes[size_t(j * ldw + k) * elem], 0xFF, size_t(ldw - k) * elem);
    }
    return m;
}

struct Case {
    pagoda_dtype_t x = PAGODA_DTYPE_F32, w = PAGODA_DTYPE_F32, y = PAGODA_DTYPE_F32;
    int64_t n_tokens = 5, top_k = 2;
    int64_t held = 4, offset = 1, global = 7;  // experts held here, the first's id, all of them
    int64_t n = 37, k = 64;
    bool per_slot = false, weighted = false, strided = false;
    bool crowd = false;    // every token's first slot picks the first held expert
    bool repeats = false;  // a token may pick one expert twice
};

std::string label(const Case &c) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "x=%s w=%s y=%s tokens=%lld top_k=%lld held=%lld+%lld/%lld n=%lld "
                  "k=%lld%s%s%s%s%s",
                  pagoda_dtype_name(c.x), pagoda_dtype_name(c.w), pagoda_dtype_name(c.y),
                  (long long)c.n_tokens, (long long)c.top_k, (long long)c.held,
                  (long long)c.offset, (long long)c.global, (long long)c.n, (long long)c.k,
                  c.per_slot ? " per_slot" : "", c.weighted ? " weighted" : "",
                  c.strided ? " strided" : "", c.crowd ? " crowd" : "",
                  c.repeats ? " repeats" : "");
    return buf;
}

// Each token's top_k ids from [0, global), never `avoid` (the held expert nobody picks).
std::vector<int32_t> random_ids(test_rng_t *rng, const Case &c, int64_t avoid) {
    std::vector<int32_t> ids(size_t(c.n_tokens * c.top_k));
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        std::vector<int32_t> pool;
        for (int64_t e = 0; e < c.global; ++e)
            if (e != avoid) pool.push_back(int32_t(e));
        for (int64_t s = 0; s < c.top_k; ++s) {
            const auto at = size_t(test_rng_int(rng, 0, int64_t(pool.size()) - 1));
            ids[size_t(t * c.top_k + s)] = pool[at];
            if (!c.repeats) pool.erase(pool.begin() + ptrdiff_t(at));
        }
        if (c.crowd) ids[size_t(t * c.top_k)] = int32_t(c.offset);
    }
    return ids;
}

void run_case(test_rng_t *rng, const Case &c) {
    const int64_t block = pagoda::formats::block_shape(c.w).elements;
    const int64_t ldw = c.strided ? c.k + (is_block(c.w) ? block : 3) : c.k;
    const int64_t ldx = c.strided ? c.k + 5 : c.k, ldy = c.strided ? c.n + 2 : c.n;
    const int64_t slots = c.n_tokens * c.top_k;
    const int64_t x_rows = c.per_slot ? slots : c.n_tokens;
    const int64_t y_rows = c.weighted ? c.n_tokens : slots;
    const int64_t unpicked = c.held - 1;  // a held expert nobody picks; its matrix is all NaN

    std::vector<Matrix> experts;
    std::vector<const void *> pointers;
    for (int64_t h = 0; h < c.held; ++h) {
        experts.push_back(random_matrix(rng, c.w, c.n, c.k, ldw));
        std::vector<unsigned char> &bytes = experts.back().bytes;
        if (h == unpicked) std::fill(bytes.begin(), bytes.end(), 0xFF);
    }
    for (const Matrix &m : experts) pointers.push_back(m.bytes.data());

    // x with NaN padding; the values kept, as doubles.
    std::vector<float> src(size_t(x_rows * ldx));
    test_fill_uniform(rng, src.data(), src.size(), -1.0f, 1.0f);
    for (int64_t r = 0; r < x_rows; ++r)
        for (int64_t q = c.k; q < ldx; ++q) src[size_t(r * ldx + q)] = NAN;
    std::vector<unsigned char> x(src.size() * pagoda_dtype_size(c.x));
    std::vector<double> xv(src.size());
    test_convert_weights(c.x, src.data(), src.size(), x.data(), xv.data());

    const std::vector<int32_t> ids = random_ids(rng, c, c.offset + unpicked);
    std::vector<float> weights(static_cast<size_t>(slots));
    test_fill_uniform(rng, weights.data(), weights.size(), -1.0f, 1.0f);
    std::vector<unsigned char> y(size_t(y_rows * ldy) * pagoda_dtype_size(c.y));
    for (int64_t i = 0; i < y_rows * ldy; ++i) store(c.y, y.data(), i, kSentinel);
    const double padding = load(c.y, y.data(), 0);  // the sentinel as y's type holds it

    // The reference: each held slot's product, into its row or its token's weighted sum.
    std::vector<double> want(size_t(y_rows * c.n), 0.0), mag(size_t(y_rows * c.n), 0.0);
    for (int64_t i = 0; i < slots; ++i) {
        const int64_t h = ids[size_t(i)] - c.offset;
        if (h < 0 || h >= c.held) continue;
        const int64_t row = c.per_slot ? i : i / c.top_k, out = c.weighted ? i / c.top_k : i;
        const double w = c.weighted ? weights[size_t(i)] : 1.0;
        for (int64_t j = 0; j < c.n; ++j) {
            double s = 0.0, m = 0.0;
            for (int64_t q = 0; q < c.k; ++q) {
                const double p = xv[size_t(row * ldx + q)] *
                                 experts[size_t(h)].values[size_t(j * c.k + q)];
                s += p;
                m += std::fabs(p);
            }
            want[size_t(out * c.n + j)] += w * s;
            mag[size_t(out * c.n + j)] += std::fabs(w) * m;
        }
    }

    pagoda_op_moe_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = c.x;
    a.w_dtype = c.w;
    a.y_dtype = c.y;
    a.n_tokens = c.n_tokens;
    a.top_k = c.top_k;
    a.n_experts = c.held;
    a.expert_offset = c.offset;
    a.n = c.n;
    a.k = c.k;
    a.x = x.data();
    a.ldx = c.strided ? ldx : 0;
    a.x_per_slot = c.per_slot ? 1u : 0u;
    a.experts = pointers.data();
    a.ldw = c.strided ? ldw : 0;
    a.expert_ids = ids.data();
    a.weights = c.weighted ? weights.data() : nullptr;
    a.y = y.data();
    a.ldy = c.strided ? ldy : 0;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &a));

    const double u = unit_roundoff(c.y);
    for (int64_t r = 0; r < y_rows; ++r) {
        for (int64_t j = 0; j < c.n; ++j) {
            const double got = load(c.y, y.data(), r * ldy + j), w = want[size_t(r * c.n + j)];
            const double bound = u * (std::fabs(w) + kTol * mag[size_t(r * c.n + j)]) +
                                 kTol * mag[size_t(r * c.n + j)];
            // Exactly 0 where no held expert contributes: mag is then 0 too.
            if (!(std::fabs(got - w) <= bound))
                fail_msg("moe_matmul %s: y[%lld, %lld] = %.9g, want %.9g", label(c).c_str(),
                         (long long)r, (long long)j, got, w);
        }
        for (int64_t j = c.n; j < ldy; ++j)
            if (load(c.y, y.data(), r * ldy + j) != padding)
                fail_msg("moe_matmul %s wrote y's padding", label(c).c_str());
    }
}

const pagoda_dtype_t kActTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
const pagoda_dtype_t kWeightTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_F16, PAGODA_DTYPE_BF16,
                                       PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_K};

// k of a case: whole blocks of the type (two), or a length no vector width divides.
int64_t k_for(pagoda_dtype_t w) {
    return is_block(w) ? 2 * pagoda::formats::block_shape(w).elements : 100;
}

void test_types(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 171);
    int i = 0;
    for (pagoda_dtype_t x : kActTypes)
        for (pagoda_dtype_t w : kWeightTypes)
            for (int per_slot = 0; per_slot <= 1; ++per_slot)
                for (int weighted = 0; weighted <= 1; ++weighted) {
                    Case c;
                    c.x = x;
                    c.w = w;
                    c.y = kActTypes[size_t(i++) % 3];
                    c.k = k_for(w);
                    c.per_slot = per_slot != 0;
                    c.weighted = weighted != 0;
                    c.strided = i % 2 == 0;
                    run_case(&rng, c);
                }
}

// The shapes around the grouping: every expert held from id 0; more slots per token than
// experts held (expert parallelism: most slots elsewhere, some tokens with none here); one
// expert picked by every token (a 100-row product, past the GEMV: sgemm on panels); a token
// picking one expert twice; one token; a product big enough to spread over the pool.
void test_shapes(void **) {
    test_rng_t rng;
    test_rng_seed(&rng, 172);
    for (pagoda_dtype_t w : kWeightTypes) {
        Case c;
        c.w = w;
        c.k = k_for(w);
        c.held = c.global = 6;
        c.offset = 0;
        c.top_k = 3;
        run_case(&rng, c);
        c.weighted = true;
        run_case(&rng, c);

        Case ep = c;
        ep.held = 3;
        ep.offset = 4;
        ep.global = 16;
        ep.top_k = 5;
        ep.n_tokens = 9;
        run_case(&rng, ep);
        ep.weighted = false;
        ep.x = PAGODA_DTYPE_BF16;
        ep.y = PAGODA_DTYPE_F16;
        run_case(&rng, ep);

        Case crowd;
        crowd.w = w;
        crowd.k = k_for(w);
        crowd.crowd = true;
        crowd.n_tokens = 100;
        crowd.weighted = true;
        crowd.x = PAGODA_DTYPE_F16;
        crowd.strided = true;
        run_case(&rng, crowd);
        crowd.weighted = false;
        crowd.y = PAGODA_DTYPE_BF16;
        run_case(&rng, crowd);

        Case twice;
        twice.w = w;
        twice.k = k_for(w);
        twice.repeats = true;
        twice.top_k = 4;
        twice.global = 5;
        twice.n_tokens = 12;
        twice.weighted = true;
        run_case(&rng, twice);

        Case one;
        one.w = w;
        one.k = k_for(w);
        one.n_tokens = 1;
        one.top_k = 1;
        one.offset = 0;
        run_case(&rng, one);
    }
    Case big;
    big.w = PAGODA_DTYPE_Q4_K;
    big.k = 512;
    big.n = 700;
    big.n_tokens = 24;
    big.top_k = 2;
    big.held = big.global = 4;
    big.offset = 0;
    big.weighted = true;
    big.x = PAGODA_DTYPE_BF16;
    big.y = PAGODA_DTYPE_BF16;
    run_case(&rng, big);
}

pagoda_op_moe_matmul_t small_descriptor(const float *x, const void *const *experts,
                                        const int32_t *ids, float *y) {
    pagoda_op_moe_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = a.w_dtype = a.y_dtype = PAGODA_DTYPE_F32;
    a.n_tokens = 2;
    a.top_k = 2;
    a.n_experts = 3;
    a.n = 2;
    a.k = 2;
    a.x = x;
    a.experts = experts;
    a.expert_ids = ids;
    a.y = y;
    return a;
}

// Refusals at launch, each before anything is written; an expert nobody picks may be NULL.
void test_refused(void **) {
    const float w0[4] = {1, 2, 3, 4}, w1[4] = {5, 6, 7, 8};
    const void *experts[3] = {w0, w1, nullptr};
    float x[4] = {1, 1, 2, 2}, y[8];
    int32_t ids[4] = {0, 1, 1, 3};  // 3 is not held: zeros
    std::fill(y, y + 8, kSentinel);
    pagoda_op_moe_matmul_t a = small_descriptor(x, experts, ids, y);
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &a));
    const float want[8] = {3, 7, 11, 15, 22, 30, 0, 0};
    for (int i = 0; i < 8; ++i) assert_true(y[i] == want[i]);

    std::fill(y, y + 8, kSentinel);
    ids[2] = -1;
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_matmul: expert_ids[2] = -1 is negative (expert ids are global, "
                        "from 0)");
    ids[2] = 2;
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_matmul: experts[2] is NULL, but expert_ids[2] picks it");
    for (float v : y) assert_true(v == kSentinel);
    ids[2] = 1;

    a.y = x + 1;
    test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "moe_matmul: y overlaps x");
    a.y = y;
    const struct {
        size_t offset;
        const char *message;
    } pointers[] = {{offsetof(pagoda_op_moe_matmul_t, x), "moe_matmul: x is NULL"},
                    {offsetof(pagoda_op_moe_matmul_t, experts), "moe_matmul: experts is NULL"},
                    {offsetof(pagoda_op_moe_matmul_t, expert_ids),
                     "moe_matmul: expert_ids is NULL"},
                    {offsetof(pagoda_op_moe_matmul_t, y), "moe_matmul: y is NULL"}};
    for (const auto &p : pointers) {
        pagoda_op_moe_matmul_t b = a;
        std::memset(reinterpret_cast<char *>(&b) + p.offset, 0, sizeof(void *));
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_MOE_MATMUL, &b));  // pointers: launch only
        test_expect_failure(test_cpu_launch(PAGODA_OP_MOE_MATMUL, &b), PAGODA_ERR_INVALID_ARGUMENT,
                            p.message);
    }
    a.ldw = 1;
    test_cpu_expect_rejected(PAGODA_OP_MOE_MATMUL, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "moe_matmul: ldw = 1 is smaller than the row length 2");
    assert_string_equal(pagoda_op_name(PAGODA_OP_MOE_MATMUL), "moe_matmul");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_refused),
    };
    int failed = cmocka_run_group_tests(tests, nullptr, nullptr);
    pagoda_backends_unload_all();
    return failed;
}
