// PAGED_ATTENTION: attention of a variable-length batch of query chunks over K/V held in
// fixed-size blocks scattered through the cache (PagedAttention, thesis §5.4.1, Eq. 5.4; the
// result equals attention over contiguous K/V).
//
// A work item is one query token of one sequence against one KV head, together with the whole
// GQA group of query heads sharing that head, so each cached row is read once per group. Items
// cover decode (many sequences, one token each) and prefill (one sequence, many tokens) alike.
// Keys are visited in tiles with an online softmax, so scratch does not grow with the context.
// When there are too few items to keep every thread busy (small decode batches, MQA), each
// item's keys are split into partitions attended separately and merged afterwards.
// Half-precision queries (act_dtype) are widened into the worker's scratch; everything after
// stays f32, partitions included, and only the output is rounded, once.
// With softcap set, each scaled score s becomes softcap · tanh(s / softcap) as a tile's scores
// are formed, before anything else reads them.
// With cache parallelism (kv_shards > 1) the kernel's keys are those of one shard: key index k
// is offset k % block_size of table entry k / block_size, whatever position that holds, and a
// query's visible positions map to a run of these local keys, possibly empty.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>

#include "check_helpers.hpp"
#include "half.hpp"
#include "kernels.hpp"
#include "scratch.hpp"
#include "kv_layout.hpp"
#include "paged_attention_rows.hpp"

namespace pagoda::cpu {

namespace {

// Keys per online-softmax step. Tiles end on multiples of it, so, being a multiple of every
// power-of-two block size, a tile never splits such a block.
constexpr int64_t kTile = 128;

// Splitting (flash-decoding, see plan_split): an item's keys are split when there are fewer than
// kItemsPerThread items per thread, into partitions of at least kMinPartition keys (a multiple
// of kTile, so partitions end on tile boundaries), which keeps the merge a small part of the
// work and leaves short contexts unsplit.
constexpr int64_t kItemsPerThread = 4;
constexpr int64_t kMinPartition = 256;

// Scratch areas start on cache lines, so the query rows copied there load aligned.
constexpr int64_t kLineFloats = 16;

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Local keys [begin, end) a query may see; empty when begin >= end.
struct KeyRange {
    int64_t begin;
    int64_t end;

    bool empty() const { return begin >= end; }
};

// How many of this launch's keys sit at positions below `pos`. Blocks are dealt to the shards in
// turn (ops.h), so each round of kv_shards blocks gives block_size local keys, and the round
// `pos` falls in gives the part of this shard's block before `pos`. Unsharded, it is `pos`.
int64_t local_keys_before(const pagoda_op_paged_attention_t &a, int64_t pos) {
    const int64_t bs = a.block_size, round = std::max<int32_t>(a.kv_shards, 1) * bs;
    return pos / round * bs + std::clamp<int64_t>(pos % round - a.kv_shard * bs, 0, bs);
}

// ops.h: query i of a chunk of q_len sits at position context_len − q_len + i; causal queries see
// keys up to their own position, others the whole context; a sliding window also hides keys
// more than sliding_window − 1 positions behind the query. Local keys keep position order, so
// those positions are one run of local keys. Unsharded the run is never empty (the query's own
// position is in it); a shard may hold none of it.
KeyRange visible_keys(const pagoda_op_paged_attention_t &a, int64_t context_len, int64_t q_len,
                      int64_t i) {
    const int64_t pos = context_len - q_len + i;
    const int64_t last = a.causal ? pos : context_len - 1;
    const int64_t first =
        a.sliding_window > 0 ? std::max<int64_t>(0, pos - a.sliding_window + 1) : 0;
    return {local_keys_before(a, first), local_keys_before(a, last + 1)};
}

// One worker's scratch: the group's queries, a tile of scores and the running softmax state.
struct GroupScratch {
    static int64_t floats(int64_t group, int64_t head_dim) {
        return round_up(group * head_dim, kLineFloats) * 2 + round_up(group * kTile, kLineFloats) +
               round_up(2 * group, kLineFloats);
    }
    GroupScratch(float *base, int64_t group, int64_t head_dim)
        : q(base),
          scores(q + round_up(group * head_dim, kLineFloats)),
          acc(scores + round_up(group * kTile, kLineFloats)),
          max(acc + round_up(group * head_dim, kLineFloats)),
          sum(max + group) {}

    float *q;       // [group][head_dim], the group's query rows, aligned
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
    pagoda_dtype_t act;  // of q and out: F32, BF16 or F16
    int64_t act_bytes;
    int64_t group;  // query heads per KV head
    int64_t q_stride;
    int64_t out_stride;
    // Split-K (see plan_split): keys per partition and partition slots per item. Unsplit,
    // max_parts = 1 and one partition holds any item's keys.
    int64_t partition;
    int64_t max_parts;
    // When split: per (item, slot) the unnormalised accumulator [group][head_dim], then the
    // max and the sum of each head: partial_floats() floats.
    float *partials;

    int64_t partial_floats() const { return group * (a.head_dim + 2); }
};

// An item's query token and KV head, the keys the token sees and the table row that finds them.
struct ItemKeys {
    int64_t token;
    int64_t kv_head;
    KeyRange keys;
    const int32_t *table;
};

ItemKeys item_keys(const Launch &l, int64_t item) {
    const pagoda_op_paged_attention_t &a = l.a;
    ItemKeys it;
    it.token = item / a.n_kv_heads;
    it.kv_head = item % a.n_kv_heads;
    const int64_t seq =
        std::upper_bound(a.query_start, a.query_start + a.n_seqs + 1, int32_t(it.token)) -
        a.query_start - 1;
    const int64_t q_len = int64_t(a.query_start[seq + 1]) - a.query_start[seq];
    it.keys = visible_keys(a, a.context_lens[seq], q_len, it.token - a.query_start[seq]);
    it.table = a.block_tables + seq * a.max_blocks_per_seq;
    return it;
}

// Keys key..key+count−1 of one tile, all in one block: their K and V rows are contiguous.
struct BlockRun {
    int64_t key;
    int64_t count;
    const unsigned char *k;
    const unsigned char *v;
};

// The run of keys from `key` to the end of its block or `end`, whichever comes first.
BlockRun block_run(const Launch &l, const ItemKeys &it, int64_t key, int64_t end) {
    const int64_t bs = l.a.block_size, offset = key % bs, block = it.table[key / bs];
    return {key, std::min(end - key, bs - offset),
            l.layout.row_ptr(static_cast<const unsigned char *>(l.a.k_cache), block, it.kv_head,
                             offset),
            l.layout.row_ptr(static_cast<const unsigned char *>(l.a.v_cache), block, it.kv_head,
                             offset)};
}

// Splits keys [begin, end) into runs that each lie in one block; returns how many.
int64_t block_runs(const Launch &l, const ItemKeys &it, int64_t begin, int64_t end,
                   BlockRun *runs) {
    int64_t n = 0;
    for (int64_t key = begin; key < end; key += runs[n++].count)
        runs[n] = block_run(l, it, key, end);
    return n;
}

// How far ahead of its reads a kernel call prefetches: about 8 KiB of rows, measured best for
// 16-token blocks of f32 (one run ahead) and bf16 (two runs ahead) alike.
constexpr int64_t kPrefetchBytes = 8192;

// The keys of one tile as block runs; rows are read K of every run, then V of every run.
struct TileRuns {
    BlockRun runs[kTile];
    int64_t n = 0;
    // Read number e of the tile (e < 2n): K of run e, then V of run e − n.
    RowPrefetch read(int64_t e, int64_t row_bytes) const {
        const BlockRun &r = runs[e < n ? e : e - n];
        return {e < n ? r.k : r.v, r.count * row_bytes};
    }
};

// Online softmax (Milakov & Gimelshein 2018) of the group's queries over keys [begin, end):
// leaves the running max, sum and unnormalised accumulator in `sc`.
void attend_keys(const Launch &l, const ItemKeys &it, int64_t begin, int64_t end,
                 GroupScratch &sc) {
    const pagoda_op_paged_attention_t &a = l.a;
    const int64_t g = l.group, d = a.head_dim;
    const int64_t row_bytes = d * int64_t(l.layout.elem_bytes);
    std::fill(sc.max, sc.max + g, -INFINITY);
    std::fill(sc.sum, sc.sum + g, 0.0f);
    std::fill(sc.acc, sc.acc + g * d, 0.0f);

    // Each kernel call prefetches the run read `ahead` runs after its own (in this tile or the
    // next), because the block table scatters consecutive runs where the hardware prefetcher
    // cannot follow.
    const int64_t ahead =
        std::clamp<int64_t>(kPrefetchBytes / (a.block_size * row_bytes), 1, kTile);
    auto tile_end = [&](int64_t tile) { return std::min(end, (tile / kTile + 1) * kTile); };
    TileRuns tiles[2];
    TileRuns *cur = &tiles[0], *next = &tiles[1];
    cur->n = block_runs(l, it, begin, tile_end(begin), cur->runs);
    for (int64_t tile = begin; tile < end;) {
        const int64_t next_tile = tile_end(tile);
        next->n =
            next_tile < end ? block_runs(l, it, next_tile, tile_end(next_tile), next->runs) : 0;
        const int64_t n = cur->n;
        auto prefetch = [&](int64_t e) {
            e += ahead;
            if (e < 2 * n) return cur->read(e, row_bytes);
            e -= 2 * n;
            return e < 2 * next->n ? next->read(e, row_bytes) : RowPrefetch{nullptr, 0};
        };
        for (int64_t i = 0; i < n; ++i) {
            const BlockRun &r = cur->runs[i];
            l.rows.scores(sc.q, g, d, r.k, a.cache_dtype, r.count, a.scale,
                          sc.scores + (r.key - tile), kTile, prefetch(i));
        }
        // Soft-capping (ABI 1.8) bends each scaled score before the softmax sees it, so the
        // running max, the weights and lse are all over capped scores.
        if (a.softcap != 0.0f)
            for (int64_t r = 0; r < g; ++r)
                l.rows.softcap(sc.scores + r * kTile, next_tile - tile, a.softcap);
        l.rows.softmax_tile(sc.scores, kTile, g, next_tile - tile, sc.max, sc.sum, sc.acc, d);
        for (int64_t i = 0; i < n; ++i) {
            const BlockRun &r = cur->runs[i];
            l.rows.accumulate(sc.scores + (r.key - tile), kTile, g, d, r.v, a.cache_dtype,
                              r.count, sc.acc, prefetch(n + i));
        }
        std::swap(cur, next);
        tile = next_tile;
    }
}

// The start of an item's group of output rows, of l.act.
void *output_rows(const Launch &l, const ItemKeys &it) {
    return static_cast<unsigned char *>(l.a.out) +
           (it.token * l.out_stride + it.kv_head * l.group * l.a.head_dim) * l.act_bytes;
}

// Writes head r of an item's group: out = acc / sum and lse = max + log(sum), the log of
// Σ exp(score) over the keys seen. A query that saw no key (sum = 0) gets 0 and −inf (ops.h).
// `acc` (head_dim floats) may be the f32 output row itself.
void finish_row(const Launch &l, const ItemKeys &it, int64_t r, const float *acc, float max,
                float sum) {
    const int64_t d = l.a.head_dim;
    void *out = output_rows(l, it);
    const bool seen = sum > 0.0f;
    const float inv = seen ? 1.0f / sum : 0.0f;
    if (l.act == PAGODA_DTYPE_F32) {
        float *o = static_cast<float *>(out) + r * d;
        for (int64_t i = 0; i < d; ++i) o[i] = seen ? acc[i] * inv : 0.0f;
    } else {
        for (int64_t i = 0; i < d; ++i)
            store_value(out, l.act, r * d + i, seen ? acc[i] * inv : 0.0f);
    }
    if (l.a.lse != nullptr)
        l.a.lse[it.token * l.a.n_q_heads + it.kv_head * l.group + r] =
            seen ? max + std::log(sum) : -INFINITY;
}

// Work unit `unit`: partition `unit % max_parts` of item `unit / max_parts`, counted from the
// item's first key. Unsplit, the result goes straight to `out`; split, to the item's partials.
void attend(const Launch &l, int64_t unit, GroupScratch &sc) {
    const pagoda_op_paged_attention_t &a = l.a;
    const int64_t item = unit / l.max_parts, slot = unit % l.max_parts;
    const ItemKeys it = item_keys(l, item);
    const int64_t part = it.keys.begin / l.partition + slot;
    const int64_t begin = std::max(it.keys.begin, part * l.partition);
    const int64_t end = std::min(it.keys.end, (part + 1) * l.partition);
    if (begin >= end) {
        // Split, the item has fewer partitions than slots (merge_partitions writes it). Unsplit,
        // the query sees no key of this shard.
        if (l.max_parts == 1)
            for (int64_t r = 0; r < l.group; ++r) finish_row(l, it, r, nullptr, -INFINITY, 0.0f);
        return;
    }

    const int64_t g = l.group, d = a.head_dim;
    const void *q = static_cast<const unsigned char *>(a.q) +
                    (it.token * l.q_stride + it.kv_head * g * d) * l.act_bytes;
    if (l.act == PAGODA_DTYPE_F32)
        std::memcpy(sc.q, q, size_t(g * d) * sizeof(float));
    else
        for (int64_t i = 0; i < g * d; ++i) sc.q[i] = load_weight(q, l.act, i);
    attend_keys(l, it, begin, end, sc);

    if (l.max_parts > 1) {
        float *p = l.partials + unit * l.partial_floats();
        std::memcpy(p, sc.acc, size_t(g * d) * sizeof(float));
        std::memcpy(p + g * d, sc.max, size_t(g) * sizeof(float));
        std::memcpy(p + g * d + g, sc.sum, size_t(g) * sizeof(float));
        return;
    }
    for (int64_t r = 0; r < g; ++r) finish_row(l, it, r, sc.acc + r * d, sc.max[r], sc.sum[r]);
}

// Combines an item's partitions (flash-decoding's log-sum-exp merge: Dao et al. 2023,
// "Flash-Decoding for long-context inference"): with M the largest partition max, partition p
// weighs exp(m_p − M), so out = Σ_p exp(m_p − M)·acc_p / Σ_p exp(m_p − M)·l_p and
// lse = M + log Σ_p exp(m_p − M)·l_p. An item that sees no key has no partitions.
// Half outputs are merged in f32 into `row` (head_dim floats, the caller's alone) and rounded.
void merge_partitions(const Launch &l, int64_t item, float *row) {
    const pagoda_op_paged_attention_t &a = l.a;
    const ItemKeys it = item_keys(l, item);
    const int64_t n_parts =
        it.keys.empty() ? 0 : (it.keys.end - 1) / l.partition - it.keys.begin / l.partition + 1;
    const int64_t g = l.group, d = a.head_dim, stride = l.partial_floats();
    const float *parts = l.partials + item * l.max_parts * stride;
    void *out = output_rows(l, it);
    for (int64_t r = 0; r < g; ++r) {
        float m = -INFINITY;
        for (int64_t p = 0; p < n_parts; ++p) m = std::max(m, parts[p * stride + g * d + r]);
        float *o = l.act == PAGODA_DTYPE_F32 ? static_cast<float *>(out) + r * d : row;
        std::fill(o, o + d, 0.0f);
        float sum = 0.0f;
        for (int64_t p = 0; p < n_parts; ++p) {
            const float *part = parts + p * stride;
            // Every partition holds at least one key, so its max is finite.
            const float w = std::exp(part[g * d + r] - m);
            sum += w * part[g * d + g + r];
            for (int64_t i = 0; i < d; ++i) o[i] += w * part[r * d + i];
        }
        finish_row(l, it, r, o, m, sum);
    }
}

// How a launch divides its items' keys: partitions of `partition` keys, aligned to multiples
// of it, and `max_parts` partition slots per item (1 when not split).
struct SplitPlan {
    int64_t partition;
    int64_t max_parts;
};

// Splits only when there are fewer than kItemsPerThread items per thread, into enough
// partitions that the work units fill every thread that many times over.
SplitPlan plan_split(const pagoda_op_paged_attention_t &a, int64_t n_items, int64_t threads) {
    // The longest context, and the most keys one query sees: the last query of a causal chunk,
    // the first of a non-causal one (a window moves its start forward).
    // Sharded, a window's local keys vary with its alignment to the blocks, so most_keys is an
    // estimate; it only sizes the partitions, and max_parts below bounds them exactly.
    int64_t longest_context = 0, most_keys = 0;
    for (int64_t s = 0; s < a.n_seqs; ++s) {
        const int64_t q_len = int64_t(a.query_start[s + 1]) - a.query_start[s];
        if (q_len == 0) continue;
        longest_context =
            std::max(longest_context, local_keys_before(a, a.context_lens[s]));
        for (int64_t i : {int64_t(0), q_len - 1}) {
            const KeyRange keys = visible_keys(a, a.context_lens[s], q_len, i);
            most_keys = std::max(most_keys, keys.end - keys.begin);
        }
    }
    // At least one tile, so that a shard holding no key still has a partition size.
    const SplitPlan unsplit{std::max(kTile, round_up(longest_context, kTile)), 1};
    if (threads <= 1 || n_items >= kItemsPerThread * threads) return unsplit;
    const int64_t parts = (kItemsPerThread * threads + n_items - 1) / n_items;
    const int64_t partition =
        std::max(kMinPartition, round_up((most_keys + parts - 1) / parts, kTile));
    if (partition >= most_keys) return unsplit;
    // Every query of a sequence sees keys between the first query's first and the context's
    // end, so these bound the partitions any of them touches.
    int64_t max_parts = 1;
    for (int64_t s = 0; s < a.n_seqs; ++s) {
        const int64_t q_len = int64_t(a.query_start[s + 1]) - a.query_start[s];
        if (q_len == 0) continue;
        const int64_t begin = visible_keys(a, a.context_lens[s], q_len, 0).begin;
        const int64_t end = local_keys_before(a, a.context_lens[s]);
        if (begin < end)
            max_parts = std::max(max_parts, (end - 1) / partition - begin / partition + 1);
    }
    return {partition, max_parts};
}

// The data-dependent checks: query offsets, context lengths and the block-table entries the
// launch will read. Needs query_start, context_lens and block_tables to be non-NULL.
pagoda_status_t check_batch(CpuBackend &cpu, const pagoda_op_paged_attention_t &a) {
    const int32_t *qs = a.query_start;
    if (qs[0] != 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "paged_attention: query_start[0] = " +
                                                         std::to_string(qs[0]) + " must be 0");
    // Sharded, the row holds every kv_shards-th block (the shared check bounds the product).
    const int64_t capacity =
        a.max_blocks_per_seq * a.block_size * std::max<int32_t>(a.kv_shards, 1);
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
                                std::to_string(a.block_size) + " × kv_shards " +
                                std::to_string(std::max<int32_t>(a.kv_shards, 1)));
        if (a.max_context_len > 0 && ctx > a.max_context_len)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "paged_attention: context_lens[" + seq + "] = " + std::to_string(ctx) +
                                " exceeds max_context_len " + std::to_string(a.max_context_len));
        if (q_len == 0) continue;
        // Only the blocks that some query of the chunk can see are read, so only they must be
        // valid (entries past the context, or behind a sliding window, may hold anything).
        // Sharded, the chunk may see no key of this shard at all.
        const int64_t begin = visible_keys(a, ctx, q_len, 0).begin;
        const int64_t end = local_keys_before(a, ctx);
        for (int64_t j = begin / a.block_size; begin < end && j <= (end - 1) / a.block_size; ++j) {
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
    const int64_t n_items = n_tokens * a.n_kv_heads;
    const SplitPlan split = plan_split(a, n_items, cpu.threads());
    const pagoda_dtype_t act = plugin::act_dtype_of(a.act_dtype);  // 0 means F32 (ops.h)
    Launch launch{a,
                  cpu.features().avx2_fma_f16c ? attention_rows_avx2() : attention_rows_portable(),
                  KvCacheLayout::of(a.n_kv_heads, a.block_size, a.head_dim, a.cache_dtype),
                  act,
                  act == PAGODA_DTYPE_F32 ? 4 : 2,
                  a.n_q_heads / a.n_kv_heads,
                  a.q_token_stride ? a.q_token_stride : row,
                  a.out_token_stride ? a.out_token_stride : row,
                  split.partition,
                  split.max_parts,
                  nullptr};

    // One scratch area per worker and, when split, the partitions' results, in the launching
    // thread's reusable scratch (scratch.hpp). The pool runs one index per worker; each pulls work units (an item, or one
    // partition of one) from a shared counter, which also balances causal prefill, where later
    // tokens see more keys. The merges wait for every partition.
    const int64_t max_parts = split.max_parts, n_units = n_items * max_parts;
    const int64_t n_workers = std::min<int64_t>(cpu.threads(), n_units);
    const int64_t per_worker = GroupScratch::floats(launch.group, a.head_dim);
    const int64_t partial_floats = max_parts > 1 ? n_units * launch.partial_floats() : 0;
    float *scratch = nullptr;
    try {
        scratch = thread_scratch<struct PagedAttentionScratch>(
            size_t(n_workers * per_worker + partial_floats + kLineFloats));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "paged_attention: no memory for " + std::to_string(n_workers) +
                            " scratch areas of " + std::to_string(per_worker) + " floats");
    }
    // Areas start on cache lines (the spare kLineFloats floats make room): aligned query rows,
    // and no line shared between workers.
    float *areas = scratch;
    while (reinterpret_cast<uintptr_t>(areas) % (kLineFloats * sizeof(float)) != 0) ++areas;
    launch.partials = areas + n_workers * per_worker;

    std::atomic<int64_t> next_unit{0};
    cpu.pool().parallel_for(n_workers, 1, [&](int64_t begin, int64_t end) {
        for (int64_t w = begin; w < end; ++w) {
            GroupScratch sc(areas + w * per_worker, launch.group, a.head_dim);
            for (int64_t unit;
                 (unit = next_unit.fetch_add(1, std::memory_order_relaxed)) < n_units;)
                attend(launch, unit, sc);
        }
    });
    if (max_parts > 1) {
        // Each worker's area is free again: its acc (group · head_dim floats) holds a merged
        // row of a half output before rounding.
        std::atomic<int64_t> next_item{0};
        cpu.pool().parallel_for(n_workers, 1, [&](int64_t begin, int64_t end) {
            for (int64_t w = begin; w < end; ++w) {
                GroupScratch sc(areas + w * per_worker, launch.group, a.head_dim);
                for (int64_t item;
                     (item = next_item.fetch_add(1, std::memory_order_relaxed)) < n_items;)
                    merge_partitions(launch, item, sc.acc);
            }
        });
    }
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
