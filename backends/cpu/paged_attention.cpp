// PAGED_ATTENTION: attention of a variable-length batch of query chunks over K/V held in
// fixed-size blocks scattered through the cache (PagedAttention, thesis §5.4.1, Eq. 5.4; the
// result equals attention over contiguous K/V).
//
// A work item is one query token of one sequence against one KV head, together with the whole
// GQA group of query heads sharing that head, so each cached row is read once per group. Items
// cover decode (many sequences, one token each) and prefill (one sequence, many tokens) alike.
// Keys are visited in tiles with an online softmax, so scratch does not grow with the context.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "kv_layout.hpp"
#include "paged_attention_rows.hpp"

namespace pagoda::cpu {

namespace {

// Keys per online-softmax step. Tiles end on multiples of it, so, being a multiple of every
// power-of-two block size, a tile never splits such a block.
constexpr int64_t kTile = 128;

// Positions [first, last] of the keys a query may see.
struct KeyRange {
    int64_t first;
    int64_t last;
};

// ops.h: query i of a chunk of q_len sits at position context_len − q_len + i; causal queries see
// keys up to their own position, others the whole context; a sliding window also hides keys
// more than sliding_window − 1 positions behind the query.
KeyRange visible_keys(const pagoda_op_paged_attention_t &a, int64_t context_len, int64_t q_len,
                      int64_t i) {
    const int64_t pos = context_len - q_len + i;
    KeyRange keys;
    keys.last = a.causal ? pos : context_len - 1;
    keys.first = a.sliding_window > 0 ? std::max<int64_t>(0, pos - a.sliding_window + 1) : 0;
    return keys;
}

// One worker's scratch: a tile of scores and the running softmax state of one GQA group.
struct GroupScratch {
    static int64_t floats(int64_t group, int64_t head_dim) {
        return group * (kTile + head_dim + 2);
    }
    GroupScratch(float *base, int64_t group, int64_t head_dim)
        : scores(base),
          acc(scores + group * kTile),
          max(acc + group * head_dim),
          sum(max + group) {}

    float *scores;  // [group][kTile]
    float *acc;     // [group][head_dim], Σ weight·v before dividing by the sum
    float *max;     // [group], running max of the scores
    float *sum;     // [group], running Σ exp(score − max)
};

// What every work item of one launch shares.
struct Launch {
    const pagoda_op_paged_attention_t &a;
    const AttentionRowKernels &rows;
    KvCacheLayout layout;
    int64_t group;  // query heads per KV head
    int64_t q_stride;
    int64_t out_stride;
};

// Calls fn(key, count, block, offset) for each run of keys in [begin, end) that lies in one
// block: keys key..key+count−1 are at offsets offset.. of physical block `block`.
template <typename Fn>
void for_each_block_run(const Launch &l, const int32_t *table, int64_t begin, int64_t end,
                        Fn &&fn) {
    const int64_t bs = l.a.block_size;
    for (int64_t key = begin; key < end;) {
        const int64_t offset = key % bs;
        const int64_t count = std::min(end - key, bs - offset);
        fn(key, count, int64_t(table[key / bs]), offset);
        key += count;
    }
}

// Attention of query token `token` for the query heads of `kv_head`'s group.
void attend(const Launch &l, int64_t token, int64_t kv_head, GroupScratch &sc) {
    const pagoda_op_paged_attention_t &a = l.a;
    const int64_t seq =
        std::upper_bound(a.query_start, a.query_start + a.n_seqs + 1, int32_t(token)) -
        a.query_start - 1;
    const int64_t q_len = int64_t(a.query_start[seq + 1]) - a.query_start[seq];
    const KeyRange keys = visible_keys(a, a.context_lens[seq], q_len, token - a.query_start[seq]);
    const int32_t *table = a.block_tables + seq * a.max_blocks_per_seq;
    const int64_t g = l.group, d = a.head_dim;
    const float *q = static_cast<const float *>(a.q) + token * l.q_stride + kv_head * g * d;
    const auto *k_cache = static_cast<const unsigned char *>(a.k_cache);
    const auto *v_cache = static_cast<const unsigned char *>(a.v_cache);

    std::fill(sc.max, sc.max + g, -INFINITY);
    std::fill(sc.sum, sc.sum + g, 0.0f);
    std::fill(sc.acc, sc.acc + g * d, 0.0f);
    for (int64_t tile = keys.first; tile <= keys.last;) {
        const int64_t tile_end = std::min(keys.last + 1, (tile / kTile + 1) * kTile);
        for_each_block_run(l, table, tile, tile_end,
                           [&](int64_t key, int64_t count, int64_t block, int64_t offset) {
                               l.rows.scores(
                                   q, g, d, l.layout.row_ptr(k_cache, block, kv_head, offset),
                                   a.cache_dtype, count, a.scale, sc.scores + (key - tile), kTile);
                           });
        l.rows.softmax_tile(sc.scores, kTile, g, tile_end - tile, sc.max, sc.sum, sc.acc, d);
        for_each_block_run(l, table, tile, tile_end,
                           [&](int64_t key, int64_t count, int64_t block, int64_t offset) {
                               l.rows.accumulate(sc.scores + (key - tile), kTile, g, d,
                                                 l.layout.row_ptr(v_cache, block, kv_head, offset),
                                                 a.cache_dtype, count, sc.acc);
                           });
        tile = tile_end;
    }

    float *out = static_cast<float *>(a.out) + token * l.out_stride + kv_head * g * d;
    for (int64_t r = 0; r < g; ++r) {
        // At least the query's own key is visible, so the sum is positive.
        const float inv = 1.0f / sc.sum[r];
        for (int64_t i = 0; i < d; ++i) out[r * d + i] = sc.acc[r * d + i] * inv;
    }
}

// The data-dependent checks: query offsets, context lengths and the block-table entries the
// launch will read. Needs query_start, context_lens and block_tables to be non-NULL.
pagoda_status_t check_batch(CpuBackend &cpu, const pagoda_op_paged_attention_t &a) {
    const int32_t *qs = a.query_start;
    if (qs[0] != 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "paged_attention: query_start[0] = " +
                                                         std::to_string(qs[0]) + " must be 0");
    const int64_t capacity = a.max_blocks_per_seq * a.block_size;
    for (int64_t s = 0; s < a.n_seqs; ++s) {
        const std::string seq = std::to_string(s);
        const int64_t q_len = int64_t(qs[s + 1]) - qs[s];
        if (q_len < 0)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "paged_attention: query_start[" + std::to_string(s + 1) + "] = " +
                                std::to_string(qs[s + 1]) + " is below query_start[" + seq +
                                "] = " + std::to_string(qs[s]) + " (offsets must not decrease)");
        const int64_t ctx = a.context_lens[s];
        if (ctx < q_len)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "paged_attention: context_lens[" + seq + "] = " + std::to_string(ctx) +
                                " is smaller than sequence " + seq + "'s q_len " +
                                std::to_string(q_len) + " (the context includes the new tokens)");
        if (ctx > capacity)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "paged_attention: context_lens[" + seq + "] = " + std::to_string(ctx) +
                                " exceeds max_blocks_per_seq " +
                                std::to_string(a.max_blocks_per_seq) + " × block_size " +
                                std::to_string(a.block_size));
        if (a.max_context_len > 0 && ctx > a.max_context_len)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "paged_attention: context_lens[" + seq + "] = " + std::to_string(ctx) +
                                " exceeds max_context_len " + std::to_string(a.max_context_len));
        if (q_len == 0) continue;
        // Only the blocks that some query of the chunk can see are read, so only they must be
        // valid (entries past the context, or behind a sliding window, may hold anything).
        const int64_t first = visible_keys(a, ctx, q_len, 0).first / a.block_size;
        const int64_t last = (ctx - 1) / a.block_size;
        for (int64_t j = first; j <= last; ++j) {
            const int64_t id = a.block_tables[s * a.max_blocks_per_seq + j];
            if (id < 0 || id >= a.num_blocks)
                return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                                "paged_attention: block_tables[" + seq + "][" + std::to_string(j) +
                                    "] = " + std::to_string(id) + " (sequence " + seq +
                                    ", block index " + std::to_string(j) +
                                    ") is outside [0, num_blocks " + std::to_string(a.num_blocks) +
                                    ")");
        }
    }
    return PAGODA_OK;
}

const char *first_null(std::initializer_list<std::pair<const char *, const void *>> fields) {
    for (const auto &[name, ptr] : fields)
        if (ptr == nullptr) return name;
    return nullptr;
}

}  // namespace

pagoda_status_t check_paged_attention(CpuBackend &cpu, const pagoda_op_paged_attention_t &a) {
    KvCacheLayout layout;
    if (pagoda_status_t s =
            check_kv_cache(cpu, "paged_attention", a.layout, a.cache_dtype, a.n_kv_heads,
                           a.head_dim, a.block_size, a.num_blocks, layout);
        s != PAGODA_OK)
        return s;
    auto invalid = [&](const std::string &what) {
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "paged_attention: " + what);
    };
    if (a.n_seqs < 0) return invalid("n_seqs " + std::to_string(a.n_seqs) + " is negative");
    if (a.n_q_heads <= 0 || a.n_q_heads % a.n_kv_heads != 0)
        return invalid("n_q_heads " + std::to_string(a.n_q_heads) +
                       " is not a positive multiple of n_kv_heads " + std::to_string(a.n_kv_heads));
    if (a.max_blocks_per_seq < 0)
        return invalid("max_blocks_per_seq " + std::to_string(a.max_blocks_per_seq) +
                       " is negative");
    int64_t unused = 0;
    if (__builtin_mul_overflow(a.max_blocks_per_seq, a.block_size, &unused))
        return invalid("max_blocks_per_seq " + std::to_string(a.max_blocks_per_seq) +
                       " is too large");
    if (a.max_context_len < 0)
        return invalid("max_context_len " + std::to_string(a.max_context_len) + " is negative");
    if (a.sliding_window < 0)
        return invalid("sliding_window " + std::to_string(a.sliding_window) + " is negative");
    if (!std::isfinite(a.scale))
        return invalid("scale " + std::to_string(a.scale) + " is not finite");
    int64_t row = 0;
    if (__builtin_mul_overflow(a.n_q_heads, a.head_dim, &row))
        return invalid("n_q_heads × head_dim is too large");
    if (pagoda_status_t s =
            check_token_stride(cpu, "paged_attention", "q_token_stride", a.q_token_stride, row);
        s != PAGODA_OK)
        return s;
    return check_token_stride(cpu, "paged_attention", "out_token_stride", a.out_token_stride, row);
}

pagoda_status_t run_paged_attention(CpuBackend &cpu, const pagoda_op_paged_attention_t &a) {
    if (a.n_seqs == 0) return PAGODA_OK;
    if (const char *null = first_null({{"query_start", a.query_start},
                                       {"context_lens", a.context_lens},
                                       {"block_tables", a.block_tables}}))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string("paged_attention: ") + null + " is NULL");
    if (pagoda_status_t s = check_batch(cpu, a); s != PAGODA_OK) return s;
    const int64_t n_tokens = a.query_start[a.n_seqs];
    if (n_tokens == 0) return PAGODA_OK;
    if (const char *null = first_null(
            {{"q", a.q}, {"k_cache", a.k_cache}, {"v_cache", a.v_cache}, {"out", a.out}}))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string("paged_attention: ") + null + " is NULL");

    const int64_t row = a.n_q_heads * a.head_dim;
    const Launch launch{
        a,
        cpu.features().avx2_fma_f16c ? attention_rows_avx2() : attention_rows_portable(),
        KvCacheLayout{a.n_kv_heads, a.block_size, a.head_dim,
                      a.cache_dtype == PAGODA_DTYPE_F32 ? 4u : 2u},
        a.n_q_heads / a.n_kv_heads,
        a.q_token_stride ? a.q_token_stride : row,
        a.out_token_stride ? a.out_token_stride : row};

    // One scratch area per worker, allocated once per launch. The pool runs one index per
    // worker; each pulls items from a shared counter, which also balances causal prefill, where
    // later tokens see more keys.
    const int64_t n_items = n_tokens * a.n_kv_heads;
    const int64_t n_workers = std::min<int64_t>(cpu.threads(), n_items);
    const int64_t per_worker = GroupScratch::floats(launch.group, a.head_dim);
    std::vector<float> scratch;
    try {
        scratch.resize(size_t(n_workers * per_worker));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "paged_attention: no memory for " + std::to_string(n_workers) +
                            " scratch areas of " + std::to_string(per_worker) + " floats");
    }
    std::atomic<int64_t> next_item{0};
    cpu.pool().parallel_for(n_workers, 1, [&](int64_t begin, int64_t end) {
        for (int64_t w = begin; w < end; ++w) {
            GroupScratch sc(scratch.data() + w * per_worker, launch.group, a.head_dim);
            for (int64_t item;
                 (item = next_item.fetch_add(1, std::memory_order_relaxed)) < n_items;)
                attend(launch, item / a.n_kv_heads, item % a.n_kv_heads, sc);
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
