// PAGODA_OP_MOE_MATMUL (ABI 1.8): each token's slots through the experts they were routed to,
// grouped by expert so that an expert's matrix is read once for all the rows that picked it (a
// prefill, or a batch of decodes) instead of once per token. The slots are bucketed by expert;
// each held expert's rows are gathered into one f32 block (bf16/f16 x widened), multiplied by
// MATMUL's own f32 route (matmul.hpp: the GEMV for decode-sized blocks, sgemm past them, block
// types decoded exactly), and the block's products are rounded into their rows of y or, with
// routing weights, weighted and summed into each token's f32 row, rounded once at the end.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "block_formats.hpp"
#include "check_helpers.hpp"
#include "kernels.hpp"
#include "matmul.hpp"
#include "op_checks.hpp"
#include "scratch.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "moe_matmul";

// f32 elements of one gathered block of x rows and their products (32 MiB, as MATMUL's
// staging): an expert picked by more rows than that takes several blocks, each reading its
// matrix again, which a block of hundreds of rows makes a small cost.
constexpr int64_t kStageElems = int64_t(1) << 23;

// A slot whose expert is held here: (the expert's index in `experts`, the slot t·top_k + s).
using HeldSlot = std::pair<int64_t, int64_t>;

// The checked descriptor with its defaults resolved.
struct Moe {
    const pagoda_op_moe_matmul_t &a;
    int64_t slots, ldx, ldw, ldy, x_bytes, y_bytes;
    bool weighted;
};

Moe resolve(const pagoda_op_moe_matmul_t &a) {
    return Moe{a,
               a.n_tokens * a.top_k,
               plugin::packed_or(a.ldx, a.k),
               plugin::packed_or(a.ldw, a.k),
               plugin::packed_or(a.ldy, a.n),
               int64_t(formats::dtype_size(a.x_dtype)),
               int64_t(formats::dtype_size(a.y_dtype)),
               a.weights != nullptr};
}

// Bytes from the first element of a [rows, ld] array to one past its last used one.
int64_t span_bytes(int64_t rows, int64_t ld, int64_t row_len, int64_t elem_bytes) {
    return ((rows - 1) * ld + row_len) * elem_bytes;
}

bool overlaps(const void *p, int64_t p_bytes, const void *q, int64_t q_bytes) {
    const auto *a = static_cast<const char *>(p), *b = static_cast<const char *>(q);
    return a < b + q_bytes && b < a + p_bytes;
}

// Everything a launch reads from its data, checked before anything is written (a failed
// launch changes nothing): `held` gets the slots whose expert is held here, sorted by expert
// (then slot), and `most_rows` the largest number of them one expert has.
pagoda_status_t bucket_slots(CpuBackend &cpu, const Moe &m, std::vector<HeldSlot> &held,
                             int64_t &most_rows) {
    const pagoda_op_moe_matmul_t &a = m.a;
    held.clear();
    for (int64_t i = 0; i < m.slots; ++i) {
        const int64_t e = a.expert_ids[i];
        if (e < 0)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            std::string(kOp) + ": " + plugin::moe_negative_id_text(i, e));
        const int64_t h = e - a.expert_offset;  // no overflow: the offset is in int32's range
        if (h >= 0 && h < a.n_experts) held.emplace_back(h, i);
    }
    std::sort(held.begin(), held.end());
    most_rows = 0;
    for (size_t r0 = 0, r1 = 0; r0 < held.size(); r0 = r1) {
        while (r1 < held.size() && held[r1].first == held[r0].first) ++r1;
        most_rows = std::max(most_rows, int64_t(r1 - r0));
        // Only the picked experts' pointers are read: an expert nobody picks may be absent.
        const int64_t h = held[r0].first;
        if (a.experts[h] == nullptr)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            std::string(kOp) + ": " +
                                plugin::moe_null_expert_text(h, held[r0].second));
    }
    return PAGODA_OK;
}

// The product of `rows` gathered x rows (f32 at x_stage) by expert `h`'s matrix into y_stage.
GemvProblem expert_problem(const Moe &m, int64_t h, int64_t rows, const float *x_stage,
                           float *y_stage) {
    const pagoda_op_moe_matmul_t &a = m.a;
    const formats::BlockShape block = formats::block_shape(a.w_dtype);
    GemvProblem p{};
    p.m = rows;
    p.n = a.n;
    p.k = a.k;
    p.x = x_stage;
    p.ldx = a.k;
    p.w = a.experts[h];
    p.w_dtype = a.w_dtype;
    p.ldw = m.ldw;
    p.w_block_values = block.elements;
    p.w_block_bytes = block.bytes;
    p.w_row_bytes = m.ldw / block.elements * block.bytes;
    p.y = y_stage;
    p.ldy = a.n;
    return p;
}

}  // namespace

pagoda_status_t run_moe_matmul(CpuBackend &cpu, const pagoda_op_moe_matmul_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "experts", a.experts));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "expert_ids", a.expert_ids));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "y", a.y));
    const Moe m = resolve(a);
    const int64_t x_rows = a.x_per_slot != 0 ? m.slots : a.n_tokens;
    const int64_t y_rows = m.weighted ? a.n_tokens : m.slots;
    if (overlaps(a.y, span_bytes(y_rows, m.ldy, a.n, m.y_bytes), a.x,
                 span_bytes(x_rows, m.ldx, a.k, m.x_bytes)))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(kOp) + ": y overlaps x");

    // Kept from launch to launch, so that steady decode steps allocate nothing.
    thread_local std::vector<HeldSlot> held;
    int64_t most_rows = 0;
    PAGODA_PLUGIN_CHECK(bucket_slots(cpu, m, held, most_rows));

    // Weighted sums go to f32 rows: y itself when it is f32, else a scratch area rounded into y
    // at the end.
    const bool sum_in_y = m.weighted && a.y_dtype == PAGODA_DTYPE_F32;
    const int64_t block = std::min(most_rows, std::max<int64_t>(1, kStageElems / (a.k + a.n)));
    float *x_stage = nullptr, *y_stage = nullptr, *sums = nullptr;
    try {
        x_stage = thread_scratch<struct MoeXStage>(size_t(block * a.k));
        y_stage = thread_scratch<struct MoeYStage>(size_t(block * a.n));
        if (m.weighted && !sum_in_y)
            sums = thread_scratch<struct MoeSums>(size_t(a.n_tokens * a.n));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        std::string(kOp) + ": no memory to stage " + std::to_string(block) +
                            " rows of an expert's input and output in f32 (k = " +
                            std::to_string(a.k) + ", n = " + std::to_string(a.n) + ")");
    }
    auto *y = static_cast<char *>(a.y);
    const auto *x = static_cast<const char *>(a.x);
    float *sum_base = sum_in_y ? reinterpret_cast<float *>(y) : sums;
    const int64_t sum_ld = sum_in_y ? m.ldy : a.n;

    // Rows no held expert writes are zeros (ops.h), and the weighted sums start from zero:
    // every output row is cleared first. Zero bits are +0 in f32, bf16 and f16 alike.
    cpu.pool().parallel_for(y_rows, rows_per_chunk(a.n), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            if (sums != nullptr) std::memset(sums + r * a.n, 0, size_t(a.n) * sizeof(float));
            else std::memset(y + r * m.ldy * m.y_bytes, 0, size_t(a.n * m.y_bytes));
        }
    });

    const CpuFeatures &features = cpu.features();
    for (size_t r0 = 0, r1 = 0; r0 < held.size(); r0 = r1) {
        const int64_t h = held[r0].first;
        while (r1 < held.size() && held[r1].first == h) ++r1;
        for (size_t b0 = r0; b0 < r1; b0 += size_t(block)) {
            const int64_t rows = std::min<int64_t>(block, int64_t(r1 - b0));
            const HeldSlot *slot = held.data() + b0;
            cpu.pool().parallel_for(rows, rows_per_chunk(a.k), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    const int64_t i = slot[r].second, row = a.x_per_slot != 0 ? i : i / a.top_k;
                    widen_to_f32(features, x + row * m.ldx * m.x_bytes, a.x_dtype, a.k,
                                 x_stage + r * a.k);
                }
            });
            PAGODA_PLUGIN_CHECK(
                run_f32_product(cpu, expert_problem(m, h, rows, x_stage, y_stage)));
            if (!m.weighted) {
                cpu.pool().parallel_for(rows, rows_per_chunk(a.n), [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r)
                        narrow_from_f32(features, y_stage + r * a.n, a.y_dtype, a.n,
                                        y + slot[r].second * m.ldy * m.y_bytes);
                });
                continue;
            }
            // Split by columns, not rows: a caller's ids may route two slots of one token to
            // the same expert, and those rows then add into the same sums.
            cpu.pool().parallel_for(a.n, std::max<int64_t>(1, 16384 / rows),
                                    [&](int64_t j0, int64_t j1) {
                for (int64_t r = 0; r < rows; ++r) {
                    const int64_t i = slot[r].second;
                    const float w = a.weights[i];
                    float *sum = sum_base + (i / a.top_k) * sum_ld;
                    const float *product = y_stage + r * a.n;
                    for (int64_t j = j0; j < j1; ++j) sum[j] += w * product[j];
                }
            });
        }
    }
    if (sums != nullptr)
        cpu.pool().parallel_for(a.n_tokens, rows_per_chunk(a.n), [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t)
                narrow_from_f32(features, sums + t * a.n, a.y_dtype, a.n,
                                y + t * m.ldy * m.y_bytes);
        });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
