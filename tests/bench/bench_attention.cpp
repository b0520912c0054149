// Paged attention through PAGODA_OP_PAGED_ATTENTION.
//
// Decode (one query token per sequence) is bound by reading the K/V cache, so its rate is bytes
// read per second: on the CPU, K/V bytes against the read probe (Llama-3-8B's heads, 32 query
// heads over 8 KV heads of 128, blocks of 16); on a GPU, K/V plus q and out against the measured
// device-to-device copy bandwidth (goal ≥ 85 %) over batch 1–256, context 128–32k, blocks of
// 16 and 32, GQA 8:1 (32 query heads over 4 KV heads of 128).
//
// Prefill (whole prompts, causal) is bound by arithmetic: on a GPU its FLOP/s are compared with
// cuBLAS's bf16 GEMM peak (goal ≥ 60 %).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace pagoda::bench {

namespace {

struct AttentionShape {
    int64_t n_seqs;
    int64_t q_len;    // query tokens per sequence: 1 for decode, `context` for a whole prompt
    int64_t context;  // cached tokens per sequence, the new ones included
    int64_t q_heads, kv_heads, head_dim, block_size;
    pagoda_dtype_t dtype;
};

constexpr double kDecodeGoal = 0.85;   // of the device-to-device copy bandwidth
constexpr double kPrefillGoal = 0.60;  // of cuBLAS's bf16 GEMM peak

// Runs one batch of `s`: every sequence has the same q_len and context.
void run_case(Bench &bench, const AttentionShape &s) {
    const bool decode = s.q_len == 1;
    const bool device = !bench.host_memory();
    const int64_t blocks_per_seq = (s.context + s.block_size - 1) / s.block_size;
    const int64_t blocks_per_set = s.n_seqs * blocks_per_seq;
    const size_t block_bytes =
        size_t(s.kv_heads * s.block_size * s.head_dim) * dtype_bytes(s.dtype);
    const size_t kv_bytes = 2 * size_t(blocks_per_set) * block_bytes;  // K and V of one batch
    // Several disjoint sets of blocks, one batch's worth each, so that consecutive launches
    // read different memory when one batch's cache would fit in the LLC.
    const int sets = rotation_copies(bench.options(), kv_bytes);
    const int64_t num_blocks = sets * blocks_per_set;

    pagoda_op_paged_attention_t op{};
    op.struct_size = sizeof op;
    op.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    op.cache_dtype = s.dtype;
    op.causal = 1;
    op.n_seqs = s.n_seqs;
    op.n_q_heads = s.q_heads;
    op.n_kv_heads = s.kv_heads;
    op.head_dim = s.head_dim;
    op.block_size = s.block_size;
    op.num_blocks = num_blocks;
    op.max_blocks_per_seq = blocks_per_seq;
    op.max_context_len = s.context;
    op.scale = 1.0f / std::sqrt(float(s.head_dim));

    JsonLine line = JsonLine::start(bench, decode ? "paged_attention_decode" : "paged_attention_prefill");
    line.add("n_seqs", s.n_seqs).add("context", s.context);
    if (!decode) line.add("q_len", s.q_len);
    line.add("n_q_heads", s.q_heads);
    line.add("n_kv_heads", s.kv_heads).add("head_dim", s.head_dim).add("block_size", s.block_size);
    line.add("cache_dtype", dtype_name(s.dtype));
    std::string why;
    if (bench.supports(PAGODA_OP_PAGED_ATTENTION, &op, why) != PAGODA_OK) {
        print_skipped(line, why);
        return;
    }
    const size_t q_bytes = size_t(s.n_seqs * s.q_len * s.q_heads * s.head_dim) * sizeof(float);
    const size_t cache_bytes = size_t(num_blocks) * block_bytes;
    // A GPU batch that would not fit beside everything else is left out, saying so.
    if (device && double(2 * cache_bytes + 2 * q_bytes) > 0.6 * double(bench.device().free_memory)) {
        print_skipped(line, "needs " + std::to_string((2 * cache_bytes + 2 * q_bytes) >> 20) +
                                " MiB of the device's " +
                                std::to_string(bench.device().free_memory >> 20) + " MiB free");
        return;
    }

    void *k_cache = bench.alloc(cache_bytes), *v_cache = bench.alloc(cache_bytes);
    bench.fill_random(k_cache, cache_bytes, s.dtype);
    bench.fill_random(v_cache, cache_bytes, s.dtype);
    void *q = bench.alloc(q_bytes), *out = bench.alloc(q_bytes);
    bench.fill_random(q, q_bytes, PAGODA_DTYPE_F32);

    // A real cache is fragmented: each set's blocks go to sequences in shuffled order.
    std::mt19937 rng(1234);
    std::vector<void *> tables(static_cast<size_t>(sets));
    for (int set = 0; set < sets; ++set) {
        std::vector<int32_t> ids(static_cast<size_t>(blocks_per_set));
        std::iota(ids.begin(), ids.end(), int32_t(set * blocks_per_set));
        std::shuffle(ids.begin(), ids.end(), rng);
        tables[size_t(set)] = bench.alloc(ids.size() * sizeof(int32_t));
        bench.upload(tables[size_t(set)], ids.data(), ids.size() * sizeof(int32_t));
    }
    std::vector<int32_t> lens(static_cast<size_t>(s.n_seqs), static_cast<int32_t>(s.context));
    std::vector<int32_t> starts(static_cast<size_t>(s.n_seqs + 1));
    for (size_t i = 0; i < starts.size(); ++i) starts[i] = int32_t(int64_t(i) * s.q_len);
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
    // Bytes one launch must move: the context's K and V (not the unused tail of the last
    // block) and, on a GPU, q in and out back, which are not negligible at batch 256.
    const double kv_read = 2.0 * double(s.n_seqs * s.context * s.kv_heads * s.head_dim) *
                           double(dtype_bytes(s.dtype));
    const double moved = device ? kv_read + 2.0 * double(q_bytes) : double(kv_bytes);
    // Decode attention is judged by bandwidth, so it is timed side by side with the probe.
    Timing t = measure(
        bench,
        [&](int64_t i) {
            op.block_tables = static_cast<const int32_t *>(tables[size_t(i % sets)]);
            bench.launch(PAGODA_OP_PAGED_ATTENTION, &op);
        },
        0, decode ? moved : 0.0);
    // Scores and the weighted sum: 2 flops per element of K and of V, per query head, over the
    // keys each query sees (causal: query i of a prompt sees context − q_len + i + 1 keys).
    const double keys_seen = double(s.q_len) * double(s.context - s.q_len) +
                             double(s.q_len) * double(s.q_len + 1) / 2.0;
    const double flops = 4.0 * double(s.n_seqs) * keys_seen * double(s.head_dim * s.q_heads);
    line.add("kv_bytes", int64_t(kv_bytes)).add("block_sets", sets);
    add_rates(line, bench, t, decode ? moved : 0.0, flops);
    if (device && decode && bench.bandwidth > 0)
        add_goal(line, "fraction_of_copy_bandwidth", moved / t.best_seconds / bench.bandwidth,
                 kDecodeGoal);
    if (device && !decode) {
        line.add("tflop_per_s", flops / t.best_seconds / 1e12);
        if (bench.gemm_peak > 0)
            add_goal(line, "fraction_of_gemm_peak", flops / t.best_seconds / bench.gemm_peak,
                     kPrefillGoal);
    }
    line.print();

    for (void *p : tables) bench.release(p);
    for (void *p : {k_cache, v_cache, q, out, d_lens, d_starts}) bench.release(p);
}

// The CPU grid: Llama-3-8B's heads, blocks of 16, f32 and bf16 caches.
void host_grid(Bench &bench) {
    const Options &o = bench.options();
    const std::vector<int64_t> seqs = o.quick ? std::vector<int64_t>{2} : std::vector<int64_t>{16, 64};
    const std::vector<int64_t> contexts =
        o.quick ? std::vector<int64_t>{256} : std::vector<int64_t>{512, 2048};
    for (pagoda_dtype_t d : {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16})
        for (int64_t n : seqs)
            for (int64_t c : contexts) run_case(bench, {n, 1, c, 32, 8, 128, 16, d});
}

// The GPU grid: decode over batch × context × block size, then whole prompts.
void device_grid(Bench &bench) {
    const Options &o = bench.options();
    const std::vector<int64_t> seqs =
        o.quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 4, 16, 64, 128, 256};
    const std::vector<int64_t> contexts = o.quick ? std::vector<int64_t>{128, 1024}
                                                  : std::vector<int64_t>{128, 512, 2048, 8192, 32768};
    const std::vector<int64_t> blocks = o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{16, 32};
    for (int64_t b : blocks)
        for (int64_t c : contexts)
            for (int64_t n : seqs) run_case(bench, {n, 1, c, 32, 4, 128, b, PAGODA_DTYPE_BF16});
    // Prompts of 512 to 16k tokens, about 16k tokens per launch where they fit.
    struct Prompt {
        int64_t n_seqs, length;
    };
    const std::vector<Prompt> prompts =
        o.quick ? std::vector<Prompt>{{2, 256}}
                : std::vector<Prompt>{{32, 512}, {8, 2048}, {2, 8192}, {1, 16384}};
    for (int64_t b : blocks)
        for (const Prompt &p : prompts)
            run_case(bench, {p.n_seqs, p.length, p.length, 32, 4, 128, b, PAGODA_DTYPE_BF16});
}

}  // namespace

void bench_attention(Bench &bench) {
    if (!wanted(bench.options(), "attention")) return;
    if (bench.host_memory())
        host_grid(bench);
    else
        device_grid(bench);
}

}  // namespace pagoda::bench
