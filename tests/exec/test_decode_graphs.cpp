// Decode steps padded to batch-size buckets and launched as recorded graphs (decode_graphs.hpp),
// on the CPU backend, whose graphs replay the recorded launches: against the same steps run op
// by op and unpadded, on twin caches whose blocks are handed out alike. Also: batches moving
// between buckets, a new cache re-recording, the op-by-op modes, and padding leaving every KV
// block it does not own untouched.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/decode_graphs.hpp"
#include "exec/llama_forward.hpp"
#include "model/model.hpp"
#include "runtime/device.hpp"
// Test headers last: they bring cmocka, whose macros clash with the standard library.
#include "paged_test_cache.hpp"

using namespace pagoda;
using pagoda::test::BatchPiece;
using pagoda::test::PagedTestCache;

namespace {

std::string exec_model(const std::string &name) {
    return std::string(PAGODA_EXEC_MODELS_DIR) + "/" + name;
}

// One model, cache and forward pass run in `mode`; twins built alike hand out the same blocks.
struct Runner {
    Runner(const std::string &path, exec::DecodeMode mode, int32_t block_size = 4,
           int64_t num_blocks = 96)
        : device(test::cpu_backend(), 0),
          stream(device),
          model(model::open_model(path, {}, nullptr)),
          forward(model, stream),
          cache(device, model->config(), block_size, num_blocks, 7) {
        forward.set_decode_mode(mode);
    }

    std::vector<float> run(std::vector<PagedTestCache::Sequence> &seqs,
                           const std::vector<std::vector<int32_t>> &tokens, bool all_logits) {
        std::vector<BatchPiece> pieces;
        for (size_t i = 0; i < tokens.size(); ++i) pieces.push_back({&seqs[i], tokens[i], all_logits});
        const exec::ForwardBatch b = test::make_batch(cache, pieces);
        std::vector<float> logits(b.logit_rows.size() * size_t(vocab()));
        forward.run(b, cache.geometry, cache.pools, logits.data());
        return logits;
    }
    int64_t vocab() const { return model->config().vocab_size; }

    runtime::Device device;
    runtime::Stream stream;
    std::shared_ptr<const model::Model> model;
    exec::LlamaForward forward;
    PagedTestCache cache;
};

// The padded steps must give the unpadded logits bit for bit: every op computes a token's row
// from that row alone (matmul rows, norms, a sequence's attention over its own blocks), and the
// CPU kernels choose their method from the shapes of the weights, not from the row count, so
// padding rows changes no arithmetic on the real ones.
void expect_same(const std::vector<float> &got, const std::vector<float> &want, const char *what,
                 int step) {
    assert_int_equal(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
            fail_msg("%s, step %d: logit %zu is %.9g, op by op %.9g", what, step, i,
                     double(got[i]), double(want[i]));
}

std::vector<int32_t> argmax_rows(const std::vector<float> &logits, int64_t vocab) {
    std::vector<int32_t> next;
    for (size_t r = 0; r < logits.size() / size_t(vocab); ++r) {
        const float *row = &logits[r * size_t(vocab)];
        next.push_back(int32_t(std::max_element(row, row + vocab) - row));
    }
    return next;
}

// Prefills `n` sequences with prompts of different lengths on both runners, then decodes
// `steps` steps, feeding back the op-by-op argmax; the decode logits must agree.
void decode_like_op_by_op(Runner &r, Runner &eager, int32_t n, int steps, unsigned seed,
                          const char *what) {
    std::mt19937 rng(seed);
    std::vector<PagedTestCache::Sequence> rs(static_cast<size_t>(n)), es(static_cast<size_t>(n));
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t i = 0; i < n; ++i) {
        std::vector<int32_t> p(size_t(2 + rng() % 6));  // at least 2: a prefill, not a decode
        for (int32_t &t : p) t = int32_t(rng() % uint32_t(r.vocab()));
        prompts.push_back(p);
    }
    expect_same(r.run(rs, prompts, false), eager.run(es, prompts, false), what, -1);
    std::vector<int32_t> next;
    for (const auto &p : prompts) next.push_back(p.back());
    for (int step = 0; step < steps; ++step) {
        std::vector<std::vector<int32_t>> tokens;
        for (int32_t t : next) tokens.push_back({t});
        const std::vector<float> got = r.run(rs, tokens, false), want = eager.run(es, tokens, false);
        expect_same(got, want, what, step);
        next = argmax_rows(want, eager.vocab());
    }
}

const char *kModels[] = {"llama_gqa_f32/hf", "qwen2_tied_f16/model.gguf", "mistral_window/hf"};

// Batches of 1, 3, 5 and 17 sequences (buckets 1, 4, 8 and 24) over several steps whose
// contexts cross block boundaries: the first step of a bucket runs padded op by op, the second
// records, later ones launch the graph.
void graphs_match_op_by_op(void **) {
    for (const char *name : kModels) {
        for (int32_t n : {1, 3, 5, 17}) {
            Runner graphs(exec_model(name), exec::DecodeMode::Graphs);
            Runner eager(exec_model(name), exec::DecodeMode::OpByOp);
            decode_like_op_by_op(graphs, eager, n, 6, 100u + unsigned(n), name);
            const exec::DecodeGraphStats &st = graphs.forward.decode_graph_stats();
            assert_int_equal(st.captures, 1);
            assert_int_equal(st.padded_op_by_op, 1);
            assert_int_equal(st.graph_launches, 5);
            const exec::DecodeGraphStats &none = eager.forward.decode_graph_stats();
            assert_int_equal(none.captures + none.graph_launches + none.padded_op_by_op, 0);
        }
    }
}

// The padding alone, without graphs, gives the same logits too.
void padded_op_by_op_matches(void **) {
    for (int32_t n : {2, 5, 17}) {
        Runner padded(exec_model("llama_gqa_f32/hf"), exec::DecodeMode::PaddedOpByOp);
        Runner eager(exec_model("llama_gqa_f32/hf"), exec::DecodeMode::OpByOp);
        decode_like_op_by_op(padded, eager, n, 4, 7u + unsigned(n), "padded op by op");
        const exec::DecodeGraphStats &st = padded.forward.decode_graph_stats();
        assert_int_equal(st.captures, 0);
        assert_int_equal(st.padded_op_by_op, 4);
    }
}

// Sequences join and leave: the batch moves between buckets (1, 4, 24, 8, 4), each bucket
// recording its own graph, and the results stay those of op-by-op steps.
void batch_moves_between_buckets(void **) {
    const std::string path = exec_model("llama_gqa_f32/hf");
    Runner graphs(path, exec::DecodeMode::Graphs), eager(path, exec::DecodeMode::OpByOp);
    std::mt19937 rng(5);
    std::vector<PagedTestCache::Sequence> gs(20), es(20);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 20; ++i) prompts.push_back({int32_t(rng() % 96), int32_t(rng() % 96)});
    expect_same(graphs.run(gs, prompts, false), eager.run(es, prompts, false), "prefill", -1);
    const int32_t sizes[] = {1, 1, 1, 3, 3, 3, 17, 17, 17, 6, 6, 6, 3, 3, 1};
    std::vector<int32_t> next(20, 1);
    for (size_t step = 0; step < sizeof sizes / sizeof sizes[0]; ++step) {
        // The first `n` sequences decode this step.
        const int32_t n = sizes[step];
        std::vector<PagedTestCache::Sequence> g_sub(gs.begin(), gs.begin() + n),
            e_sub(es.begin(), es.begin() + n);
        std::vector<std::vector<int32_t>> tokens;
        for (int32_t i = 0; i < n; ++i) tokens.push_back({next[size_t(i)]});
        const std::vector<float> got = graphs.run(g_sub, tokens, false),
                                 want = eager.run(e_sub, tokens, false);
        expect_same(got, want, "moving between buckets", int(step));
        std::copy(g_sub.begin(), g_sub.end(), gs.begin());
        std::copy(e_sub.begin(), e_sub.end(), es.begin());
        const std::vector<int32_t> picked = argmax_rows(want, eager.vocab());
        std::copy(picked.begin(), picked.end(), next.begin());
    }
    // Buckets 1, 4, 24 and 8 each warmed up once and recorded; the buckets share activations,
    // which bucket 24 grew, so 4 and 1 recorded again (without a warm-up) when they came back.
    const exec::DecodeGraphStats &st = graphs.forward.decode_graph_stats();
    assert_int_equal(st.captures, 6);
    assert_int_equal(st.padded_op_by_op, 4);
    assert_int_equal(st.graph_launches, 11);
}

// A second cache (other pools, another block size) makes the forward pass drop its graphs and
// record anew; coming back to the first cache records again too.
void new_cache_records_again(void **) {
    const std::string path = exec_model("llama_gqa_f32/hf");
    Runner graphs(path, exec::DecodeMode::Graphs), eager(path, exec::DecodeMode::OpByOp);
    PagedTestCache other_g(graphs.device, graphs.model->config(), 8, 40, 9),
        other_e(eager.device, eager.model->config(), 8, 40, 9);
    std::vector<PagedTestCache::Sequence> gs(3), es(3), go(3), eo(3);
    const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {4}, {5, 6}};
    graphs.run(gs, prompts, false);
    eager.run(es, prompts, false);
    auto step = [&](PagedTestCache &gc, PagedTestCache &ec, std::vector<PagedTestCache::Sequence> &g,
                    std::vector<PagedTestCache::Sequence> &e, int i) {
        const std::vector<std::vector<int32_t>> tokens = {{7}, {8}, {9}};
        std::vector<BatchPiece> gp, ep;
        for (size_t s = 0; s < 3; ++s) {
            gp.push_back({&g[s], tokens[s]});
            ep.push_back({&e[s], tokens[s]});
        }
        const exec::ForwardBatch gb = test::make_batch(gc, gp), eb = test::make_batch(ec, ep);
        std::vector<float> got(3 * size_t(graphs.vocab())), want(got.size());
        graphs.forward.run(gb, gc.geometry, gc.pools, got.data());
        eager.forward.run(eb, ec.geometry, ec.pools, want.data());
        expect_same(got, want, "cache switch", i);
    };
    for (int i = 0; i < 3; ++i) step(graphs.cache, eager.cache, gs, es, i);
    assert_int_equal(graphs.forward.decode_graph_stats().captures, 1);
    // Prefill on the other cache, then decode there: warm-up and a new recording.
    {
        std::vector<BatchPiece> gp, ep;
        for (size_t s = 0; s < 3; ++s) {
            gp.push_back({&go[s], prompts[s]});
            ep.push_back({&eo[s], prompts[s]});
        }
        const exec::ForwardBatch gb = test::make_batch(other_g, gp), eb = test::make_batch(other_e, ep);
        std::vector<float> got(3 * size_t(graphs.vocab())), want(got.size());
        graphs.forward.run(gb, other_g.geometry, other_g.pools, got.data());
        eager.forward.run(eb, other_e.geometry, other_e.pools, want.data());
        expect_same(got, want, "other cache prefill", 0);
    }
    for (int i = 0; i < 3; ++i) step(other_g, other_e, go, eo, 10 + i);
    assert_int_equal(graphs.forward.decode_graph_stats().captures, 2);
    for (int i = 0; i < 3; ++i) step(graphs.cache, eager.cache, gs, es, 20 + i);
    assert_int_equal(graphs.forward.decode_graph_stats().captures, 3);
}

// Op by op records nothing and pads nothing.
void op_by_op_mode_records_nothing(void **) {
    Runner r(exec_model("llama_gqa_f32/hf"), exec::DecodeMode::OpByOp);
    std::vector<PagedTestCache::Sequence> s(2);
    r.run(s, {{1, 2}, {3}}, false);
    for (int i = 0; i < 4; ++i) r.run(s, {{4}, {5}}, false);
    const exec::DecodeGraphStats &st = r.forward.decode_graph_stats();
    assert_int_equal(st.captures + st.graph_launches + st.padded_op_by_op, 0);
}

// Every byte of every pool that no real token writes stays as it was, block 0 (which the
// padding's attention reads) included: padding writes to slot −1, that is nowhere.
void padding_leaves_kv_blocks_alone(void **) {
    for (exec::DecodeMode mode : {exec::DecodeMode::PaddedOpByOp, exec::DecodeMode::Graphs}) {
        Runner r(exec_model("llama_gqa_f32/hf"), mode, 4, 24);
        const kv::KvGeometry &g = r.cache.geometry;
        // Recognisable contents everywhere first.
        for (const kv::LayerPools &p : r.cache.pools) {
            std::memset(p.k, 0x3C, g.pool_bytes());
            std::memset(p.v, 0x3C, g.pool_bytes());
        }
        std::vector<PagedTestCache::Sequence> s(3);
        r.run(s, {{1, 2, 3}, {4, 5}, {6}}, false);
        for (int step = 0; step < 4; ++step) {
            std::vector<std::vector<unsigned char>> before;
            for (const kv::LayerPools &p : r.cache.pools) {
                before.emplace_back(static_cast<unsigned char *>(p.k),
                                    static_cast<unsigned char *>(p.k) + g.pool_bytes());
                before.emplace_back(static_cast<unsigned char *>(p.v),
                                    static_cast<unsigned char *>(p.v) + g.pool_bytes());
            }
            std::vector<int64_t> written;
            for (const auto &seq : s) {
                const int32_t pos = seq.length;  // where this step's token lands
                if (pos / g.block_size < int32_t(seq.blocks.size()))
                    written.push_back(int64_t(seq.blocks[size_t(pos / g.block_size)]) * g.block_size +
                                      pos % g.block_size);
                else
                    written.push_back(-1);  // a block the step is about to take; checked below
            }
            r.run(s, {{7}, {8}, {9}}, false);
            for (size_t i = 0; i < s.size(); ++i)
                if (written[i] < 0)
                    written[i] = int64_t(s[i].blocks.back()) * g.block_size +
                                 (s[i].length - 1) % g.block_size;
            // Per pool, per block, per head, per in-block token: changed only at written slots.
            const size_t dsize = g.block_bytes() / size_t(g.n_kv_heads * g.block_size * g.head_dim);
            const size_t row = size_t(g.head_dim) * dsize;
            for (size_t pool = 0; pool < before.size(); ++pool) {
                const auto *now = static_cast<const unsigned char *>(
                    pool % 2 == 0 ? r.cache.pools[pool / 2].k : r.cache.pools[pool / 2].v);
                for (int64_t b = 0; b < g.num_blocks; ++b)
                    for (int64_t h = 0; h < g.n_kv_heads; ++h)
                        for (int64_t t = 0; t < g.block_size; ++t) {
                            const int64_t slot = b * g.block_size + t;
                            if (std::find(written.begin(), written.end(), slot) != written.end())
                                continue;
                            const size_t off = size_t((b * g.n_kv_heads + h) * g.block_size + t) * row;
                            if (std::memcmp(now + off, before[pool].data() + off, row) != 0)
                                fail_msg("step %d: pool %zu block %lld head %lld token %lld changed",
                                         step, pool, (long long)b, (long long)h, (long long)t);
                        }
            }
        }
        const exec::DecodeGraphStats &st = r.forward.decode_graph_stats();
        assert_int_equal(st.graph_launches + st.padded_op_by_op, 4);
    }
}

// Block-table rows are as wide as the model's context length (64 tokens for this model, 16
// blocks of 4): a sequence that decodes past it needs a wider row and runs op by op, unpadded.
void context_past_fixed_rows_runs_op_by_op(void **) {
    const std::string path = exec_model("llama3_scaled/hf");
    Runner graphs(path, exec::DecodeMode::Graphs), eager(path, exec::DecodeMode::OpByOp);
    assert_int_equal(graphs.model->config().max_position, 64);
    std::vector<PagedTestCache::Sequence> gs(2), es(2);
    std::vector<int32_t> long_prompt(61), short_prompt = {3, 4, 5};
    for (size_t i = 0; i < long_prompt.size(); ++i) long_prompt[i] = int32_t(i % 50);
    expect_same(graphs.run(gs, {long_prompt, short_prompt}, false),
                eager.run(es, {long_prompt, short_prompt}, false), "long prefill", -1);
    // Contexts 62, 63, 64 fit the 16-block rows; 65 and 66 do not.
    for (int step = 0; step < 5; ++step) {
        expect_same(graphs.run(gs, {{7}, {8}}, false), eager.run(es, {{7}, {8}}, false),
                    "long context", step);
        const exec::DecodeGraphStats &st = graphs.forward.decode_graph_stats();
        assert_int_equal(st.graph_launches + st.padded_op_by_op, step < 3 ? step + 1 : 3);
    }
}

// The buckets: 1, 2, 4, 8, 16, 24, 32, then multiples of 16 up to 256.
void buckets(void **) {
    const int32_t cases[][2] = {{1, 1},   {2, 2},   {3, 4},     {5, 8},   {9, 16},  {17, 24},
                                {25, 32}, {33, 48}, {48, 48},   {49, 64}, {255, 256},
                                {256, 256}, {257, 0}, {0, 0}};
    for (const auto &c : cases) assert_int_equal(exec::decode_bucket(c[0]), c[1]);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buckets),
        cmocka_unit_test(graphs_match_op_by_op),
        cmocka_unit_test(padded_op_by_op_matches),
        cmocka_unit_test(batch_moves_between_buckets),
        cmocka_unit_test(new_cache_records_again),
        cmocka_unit_test(op_by_op_mode_records_nothing),
        cmocka_unit_test(padding_leaves_kv_blocks_alone),
        cmocka_unit_test(context_past_fixed_rows_runs_op_by_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
