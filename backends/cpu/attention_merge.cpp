// PAGODA_OP_ATTENTION_MERGE: the attention of each query (token, head) over the keys of several
// parts (KV shards, cache parallelism), from each part's attention over its own keys and that
// attention's log-normaliser lse. It is flash-decoding's merge of split-K partitions (Dao et al.
// 2023, "Flash-Decoding for long-context inference"): with L = log Σ_p exp(lse_p), part p weighs
// exp(lse_p − L), computed as exp(lse_p − M) / Σ_q exp(lse_q − M) with M the largest lse so that
// nothing overflows. Half parts are widened per element; each output is rounded once.
#include <algorithm>
#include <cmath>
#include <new>
#include <string>

#include "check_helpers.hpp"
#include "half.hpp"
#include "kernels.hpp"
#include "scratch.hpp"

namespace pagoda::cpu {

namespace {

struct MergeRows {
    const pagoda_op_attention_merge_t &a;
    int64_t out_stride;  // elements between tokens of `out`
    float *weights;      // [n_tokens · n_heads][n_parts], each row its own
};

// One (token, head) row: its parts' weights, then out and lse_out. A part that saw no key (lse
// −inf) weighs 0 and is not read; a row where no part saw a key gives 0 and −inf (ops.h).
template <pagoda_dtype_t A>
void merge_row(const MergeRows &m, int64_t row) {
    const pagoda_op_attention_merge_t &a = m.a;
    const int64_t rows = a.n_tokens * a.n_heads, d = a.head_dim;
    const int64_t token = row / a.n_heads, head = row % a.n_heads;
    float *w = m.weights + row * a.n_parts;
    float max = -INFINITY;
    for (int64_t p = 0; p < a.n_parts; ++p) max = std::max(max, a.lse[p * rows + row]);
    float sum = 0.0f;
    if (max != -INFINITY)
        for (int64_t p = 0; p < a.n_parts; ++p) sum += w[p] = std::exp(a.lse[p * rows + row] - max);
    const int64_t out = token * m.out_stride + head * d;
    if (!(sum > 0.0f)) {
        for (int64_t i = 0; i < d; ++i) store_from_f32<A>(a.out, out + i, 0.0f);
        if (a.lse_out != nullptr) a.lse_out[row] = -INFINITY;
        return;
    }
    for (int64_t p = 0; p < a.n_parts; ++p) w[p] /= sum;
    for (int64_t i = 0; i < d; ++i) {
        float acc = 0.0f;
        for (int64_t p = 0; p < a.n_parts; ++p)
            if (w[p] != 0.0f) acc += w[p] * load_as_f32<A>(a.parts, (p * rows + row) * d + i);
        store_from_f32<A>(a.out, out + i, acc);
    }
    if (a.lse_out != nullptr) a.lse_out[row] = max + std::log(sum);
}

template <pagoda_dtype_t A>
void merge_rows(const MergeRows &m, int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) merge_row<A>(m, row);
}

}  // namespace

pagoda_status_t run_attention_merge(CpuBackend &cpu, const pagoda_op_attention_merge_t &a) {
    constexpr const char *op = "attention_merge";
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "parts", a.parts));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "lse", a.lse));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, op, "out", a.out));
    const int64_t rows = a.n_tokens * a.n_heads;
    // The weights live in the launching thread's reusable scratch (scratch.hpp), so a steady
    // run of decode steps allocates nothing.
    float *weights = nullptr;
    try {
        weights = thread_scratch<struct AttentionMergeScratch>(size_t(rows * a.n_parts));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(op) + ": no memory for " +
                                                      std::to_string(rows * a.n_parts) +
                                                      " weights");
    }
    const MergeRows m{a, plugin::packed_or(a.out_token_stride, a.n_heads * a.head_dim), weights};
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);
    cpu.pool().parallel_for(rows, rows_per_chunk(a.n_parts * a.head_dim),
                            [&](int64_t begin, int64_t end) {
                                switch (act) {
                                    case PAGODA_DTYPE_BF16:
                                        return merge_rows<PAGODA_DTYPE_BF16>(m, begin, end);
                                    case PAGODA_DTYPE_F16:
                                        return merge_rows<PAGODA_DTYPE_F16>(m, begin, end);
                                    default: return merge_rows<PAGODA_DTYPE_F32>(m, begin, end);
                                }
                            });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
