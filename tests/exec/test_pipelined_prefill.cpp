// PipelinedPrefill: a prompt sliced and run through 2 or 3 layer-range stages on their own
// threads gives the logits (and leaves the KV cache) that one unpipelined forward pass does;
// bad boundaries, slices and a failing stage are errors, never hangs.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/llama_forward.hpp"
#include "exec/pipelined_prefill.hpp"
#include "kv/kv_cache.hpp"
#include "model/model.hpp"
#include "runtime/device.hpp"
// Test headers last: they bring cmocka, whose macros clash with the standard library.
#include "paged_test_cache.hpp"

using namespace pagoda;

namespace {

const std::string kModel = std::string(PAGODA_EXEC_MODELS_DIR) + "/llama_bf16_linear/model.gguf";  // 3 layers

struct Rig {
    Rig()
        : device(std::make_shared<const runtime::Device>(test::cpu_backend(), 0)),
          streams{std::make_unique<runtime::Stream>(*device), std::make_unique<runtime::Stream>(*device),
                  std::make_unique<runtime::Stream>(*device)},
          model(model::open_model(kModel, {}, nullptr)) {}

    std::unique_ptr<kv::KvCache> cache() const {
        kv::KvGeometry g;
        g.dtype = PAGODA_DTYPE_F32;
        g.block_size = 4;
        g.num_blocks = 32;
        g.n_layers = model->config().n_layers;
        g.n_kv_heads = model->config().n_kv_heads;
        g.head_dim = model->config().head_dim;
        return std::make_unique<kv::KvCache>(device, g);
    }
    std::vector<const runtime::Stream *> stage_streams(size_t k) const {
        std::vector<const runtime::Stream *> s;
        for (size_t i = 0; i < k; ++i) s.push_back(streams[i].get());
        return s;
    }
    std::vector<int32_t> prompt(size_t n) const {
        std::mt19937 rng(5);
        std::vector<int32_t> t;
        for (size_t i = 0; i < n; ++i) t.push_back(int32_t(rng() % uint32_t(model->config().vocab_size)));
        return t;
    }

    std::shared_ptr<const runtime::Device> device;
    std::unique_ptr<runtime::Stream> streams[3];
    std::shared_ptr<const model::Model> model;
};

// The last prompt token's logits from one unpipelined pass, then one decode step's logits.
struct Result {
    std::vector<float> prefill, decode;
};

exec::ForwardBatch one_sequence(const std::vector<int32_t> &tokens, int64_t start,
                                const std::vector<int32_t> &table, int32_t bs) {
    exec::ForwardBatch b;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t pos = start + int64_t(i);
        b.token_ids.push_back(tokens[i]);
        b.positions.push_back(int32_t(pos));
        b.slot_mapping.push_back(int64_t(table[size_t(pos / bs)]) * bs + pos % bs);
    }
    b.query_start = {0, int32_t(tokens.size())};
    b.context_lens = {int32_t(start + int64_t(tokens.size()))};
    b.max_context_len = b.context_lens[0];
    b.max_blocks_per_seq = int32_t(table.size());
    b.block_tables = table;
    b.logit_rows = {int32_t(tokens.size() - 1)};
    return b;
}

// A decode step after the prompt, through a plain LlamaForward: it reads every layer's K/V, so
// it checks what the stages wrote.
std::vector<float> decode_after(Rig &r, kv::KvCache &cache, const std::vector<int32_t> &prompt) {
    exec::LlamaForward forward(r.model, *r.streams[0]);
    std::vector<float> logits(size_t(r.model->config().vocab_size));
    const int64_t n = int64_t(prompt.size());
    assert_true(cache.reserve(1, n + 1));
    forward.run(one_sequence({7}, n, cache.table(1), cache.geometry().block_size), cache.geometry(),
                cache.pools(), logits.data());
    return logits;
}

Result unpipelined(Rig &r, const std::vector<int32_t> &prompt) {
    auto cache = r.cache();
    assert_true(cache->reserve(1, int64_t(prompt.size())));
    exec::LlamaForward forward(r.model, *r.streams[0]);
    Result out;
    out.prefill.resize(size_t(r.model->config().vocab_size));
    forward.run(one_sequence(prompt, 0, cache->table(1), cache->geometry().block_size),
                cache->geometry(), cache->pools(), out.prefill.data());
    out.decode = decode_after(r, *cache, prompt);
    return out;
}

double max_relative_difference(const std::vector<float> &a, const std::vector<float> &b) {
    double diff = 0, top = 1e-30;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
        top = std::max(top, std::fabs(double(b[i])));
    }
    return diff / top;
}

void test_stages_match_one_pass(void **) {
    Rig r;
    const std::vector<int32_t> prompt = r.prompt(23);
    const Result want = unpipelined(r, prompt);
    struct Case {
        std::vector<int32_t> boundaries;
        std::vector<int64_t> slices;
    };
    const std::vector<Case> cases = {
        {{0, 1, 3}, {23}},            // two stages, one slice: no overlap, still correct
        {{0, 1, 3}, {5, 3, 9, 6}},    // slices that straddle blocks of 4
        {{0, 2, 3}, {1, 1, 1, 20}},
        {{0, 1, 2, 3}, {8, 8, 7}},    // three stages
        {{0, 3}, {10, 13}},           // one stage: a chunked prefill
    };
    for (const Case &c : cases) {
        auto cache = r.cache();
        assert_true(cache->reserve(1, int64_t(prompt.size())));
        exec::PipelinedPrefill pipe(r.model, r.stage_streams(c.boundaries.size() - 1), c.boundaries);
        const std::vector<float> logits = pipe.run(prompt, c.slices, *cache, 1);
        // Slicing changes only the order of attention's sums.
        assert_true(max_relative_difference(logits, want.prefill) < 1e-5);
        assert_true(max_relative_difference(decode_after(r, *cache, prompt), want.decode) < 1e-5);
    }
}

void test_bad_input(void **) {
    Rig r;
    const std::vector<int32_t> prompt = r.prompt(12);
    test::expect_error([&] { exec::PipelinedPrefill(r.model, r.stage_streams(2), {0, 3}); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"2 stages need 3 boundaries"});
    test::expect_error([&] { exec::PipelinedPrefill(r.model, r.stage_streams(2), {0, 0, 3}); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"stage 0 has no layers"});
    test::expect_error([&] { exec::PipelinedPrefill(r.model, r.stage_streams(2), {0, 1, 4}); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"from 0 to 3"});
    exec::PipelinedPrefill pipe(r.model, r.stage_streams(2), {0, 1, 3});
    auto cache = r.cache();
    assert_true(cache->reserve(1, 12));
    test::expect_error([&] { pipe.run(prompt, {5, 5}, *cache, 1); }, PAGODA_ERR_INVALID_ARGUMENT,
                       {"slices sum to 10 tokens, the prompt has 12"});
    test::expect_error([&] { pipe.run(prompt, {12, 0}, *cache, 1); }, PAGODA_ERR_INVALID_ARGUMENT,
                       {"slice length 0"});
    test::expect_error([&] { pipe.run(r.prompt(40), {40}, *cache, 1); },
                       PAGODA_ERR_INVALID_ARGUMENT, {"has room for 12 tokens, not 40"});
    // A token id past the vocabulary fails in stage 0's embedding, in the second slice: stage 1,
    // waiting for it, must stop too, and the error comes back here.
    std::vector<int32_t> bad = prompt;
    bad[7] = int32_t(r.model->config().vocab_size) + 5;
    test::expect_error([&] { pipe.run(bad, {4, 4, 4}, *cache, 1); }, PAGODA_ERR_BACKEND,
                       {"embedding"});
    // The stage API on its own: a later stage needs hidden states in, an earlier one a buffer out.
    exec::LlamaForward forward(r.model, *r.streams[0]);
    const exec::ForwardBatch b = one_sequence(prompt, 0, cache->table(1), cache->geometry().block_size);
    std::vector<float> logits(size_t(r.model->config().vocab_size));
    test::expect_error([&] {
        forward.run_stage(b, cache->geometry(), cache->pools(), {1, 3, nullptr, nullptr}, logits.data());
    }, PAGODA_ERR_INVALID_ARGUMENT, {"without hidden states"});
    test::expect_error([&] {
        forward.run_stage(b, cache->geometry(), cache->pools(), {0, 2, nullptr, nullptr}, logits.data());
    }, PAGODA_ERR_INVALID_ARGUMENT, {"without a buffer"});
    test::expect_error([&] {
        forward.run_stage(b, cache->geometry(), cache->pools(), {2, 2, nullptr, nullptr}, logits.data());
    }, PAGODA_ERR_INVALID_ARGUMENT, {"layers [2, 2)"});
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stages_match_one_pass),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
