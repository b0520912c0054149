// Paged-attention decode (one query token per sequence) through PAGODA_OP_PAGED_ATTENTION,
// Llama-3-8B's head shape: 32 query heads over 8 KV heads of 128, blocks of 16 tokens. Decode
// is bound by reading the K/V cache, so the rate reported is K/V bytes read per second.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace pagoda::bench {

namespace {

constexpr int64_t kQHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlockSize = 16;

void run_case(Bench &bench, int64_t n_seqs, int64_t context, pagoda_dtype_t dtype) {
    const int64_t blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
    const int64_t blocks_per_set = n_seqs * blocks_per_seq;
    const size_t block_bytes = size_t(kKvHeads * kBlockSize * kHeadDim) * dtype_bytes(dtype);
    const size_t kv_bytes = 2 * size_t(blocks_per_set) * block_bytes;  // K and V of one batch
    // Several disjoint sets of blocks, one batch's worth each, so that consecutive launches
    // read different memory when one batch's cache would fit in the LLC.
    const int sets = rotation_copies(bench.options(), kv_bytes);
    const int64_t num_blocks = sets * blocks_per_set;

    pagoda_op_paged_attention_t op{};
    op.struct_size = sizeof op;
    op.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    op.cache_dtype = dtype;
    op.causal = 1;
    op.n_seqs = n_seqs;
    op.n_q_heads = kQHeads;
    op.n_kv_heads = kKvHeads;
    op.head_dim = kHeadDim;
    op.block_size = kBlockSize;
    op.num_blocks = num_blocks;
    op.max_blocks_per_seq = blocks_per_seq;
    op.max_context_len = context;
    op.scale = 1.0f / std::sqrt(float(kHeadDim));

    JsonLine line = JsonLine::start(bench, "paged_attention_decode");
    line.add("n_seqs", n_seqs).add("context", context).add("n_q_heads", kQHeads);
    line.add("n_kv_heads", kKvHeads).add("head_dim", kHeadDim).add("block_size", kBlockSize);
    line.add("cache_dtype", dtype_name(dtype));
    std::string why;
    if (bench.supports(PAGODA_OP_PAGED_ATTENTION, &op, why) != PAGODA_OK) {
        print_skipped(line, why);
        return;
    }

    const size_t cache_bytes = size_t(num_blocks) * block_bytes;
    void *k_cache = bench.alloc(cache_bytes), *v_cache = bench.alloc(cache_bytes);
    bench.fill_random(k_cache, cache_bytes, dtype);
    bench.fill_random(v_cache, cache_bytes, dtype);
    const size_t q_bytes = size_t(n_seqs * kQHeads * kHeadDim) * sizeof(float);
    void *q = bench.alloc(q_bytes), *out = bench.alloc(q_bytes);
    bench.fill_random(q, q_bytes, PAGODA_DTYPE_F32);

    // A real cache is fragmented: each set's blocks go to sequences in shuffled order.
    std::mt19937 rng(1234);
    std::vector<void *> tables(static_cast<size_t>(sets));
    for (int s = 0; s < sets; ++s) {
        std::vector<int32_t> ids(static_cast<size_t>(blocks_per_set));
        std::iota(ids.begin(), ids.end(), int32_t(s * blocks_per_set));
        std::shuffle(ids.begin(), ids.end(), rng);
        tables[size_t(s)] = bench.alloc(ids.size() * sizeof(int32_t));
        bench.upload(tables[size_t(s)], ids.data(), ids.size() * sizeof(int32_t));
    }
    std::vector<int32_t> lens(static_cast<size_t>(n_seqs), static_cast<int32_t>(context));
    std::vector<int32_t> starts(static_cast<size_t>(n_seqs + 1));
    std::iota(starts.begin(), starts.end(), 0);
    void *d_lens = bench.alloc(lens.size() * sizeof(int32_t));
    void *d_starts = bench.alloc(starts.size() * sizeof(int32_t));
    bench.upload(d_lens, lens.data(), lens.size() * sizeof(int32_t));
    bench.upload(d_starts, starts.data(), starts.size() * sizeof(int32_t));

    op.q = q;
    op.k_cache = k_cache;
    op.v_cache = v_cache;
    op.context_lens = static_cast<const int32_t *>(d_lens);
    op.query_start = static_cast<const int32_t *>(d_starts);
    op.out = out;
    // Decode attention is judged by bandwidth, so it is timed side by side with the probe.
    Timing t = measure(
        bench,
        [&](int64_t i) {
            op.block_tables = static_cast<const int32_t *>(tables[size_t(i % sets)]);
            bench.launch(PAGODA_OP_PAGED_ATTENTION, &op);
        },
        0, double(kv_bytes));
    // Scores and the weighted sum: 2 flops per element of K and of V, per query head.
    const double flops = 4.0 * double(n_seqs * context * kHeadDim * kQHeads);
    line.add("kv_bytes", int64_t(kv_bytes)).add("block_sets", sets);
    add_rates(line, bench, t, double(kv_bytes), flops);
    line.print();

    for (void *p : tables) bench.release(p);
    for (void *p : {k_cache, v_cache, q, out, d_lens, d_starts}) bench.release(p);
}

}  // namespace

void bench_attention(Bench &bench) {
    const Options &o = bench.options();
    if (!wanted(o, "attention")) return;
    const std::vector<int64_t> seqs = o.quick ? std::vector<int64_t>{2} : std::vector<int64_t>{16, 64};
    const std::vector<int64_t> contexts =
        o.quick ? std::vector<int64_t>{256} : std::vector<int64_t>{512, 2048};
    for (pagoda_dtype_t d : {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16})
        for (int64_t n : seqs)
            for (int64_t c : contexts) run_case(bench, n, c, d);
}

}  // namespace pagoda::bench
