// The property test of issue 4: random interleavings of submit, step and abort on a KV cache
// too small for the load (so requests are preempted, by recompute or by swap), with prefix
// sharing on and chunked prefill, keep the block accounting exact after every operation
// (KvCache::check_invariants) and give every request the greedy tokens it gets alone. Some
// requests run two greedy sequences (n = 2, forked from the prompt, scheduled and swapped as a
// group): each must equal the run alone too; such a group may instead end with
// OUT_OF_MEMORY when the swap space cannot take it.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "engine/engine.hpp"
#include "engine/model_tokenizer.hpp"
#include "kv/kv_cache.hpp"
#include "model/model.hpp"
#include "pagoda/pagoda.h"
#include "runtime/device.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

namespace {

using namespace pagoda;

constexpr int32_t kMaxTokens = 8;
constexpr int64_t kOpsPerMode = 100000;

std::shared_ptr<const runtime::Device> cpu_device() {
    static pagoda_backend_t *backend = nullptr;
    if (backend == nullptr &&
        pagoda_backend_load(PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so", "threads=1", &backend) != PAGODA_OK)
        fail_msg("loading the CPU backend failed: %s", pagoda_last_error_message());
    return std::make_shared<runtime::Device>(backend, 0);
}

std::shared_ptr<const model::Model> stories() {
    static std::shared_ptr<const model::Model> m =
        model::open_model(PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf", {}, nullptr);
    return m;
}

std::shared_ptr<const tok::Tokenizer> stories_tokenizer() {
    static std::shared_ptr<const tok::Tokenizer> t = engine::open_model_tokenizer(*stories());
    return t;
}

kv::KvGeometry geometry(const model::ModelConfig &c, int64_t num_blocks, int32_t block_size) {
    kv::KvGeometry g;
    g.block_size = block_size;
    g.num_blocks = num_blocks;
    g.n_layers = c.n_layers;
    g.n_kv_heads = c.n_kv_heads;
    g.head_dim = c.head_dim;
    return g;
}

engine::RequestConfig greedy(int32_t max_tokens) {
    engine::RequestConfig c;
    c.flags = PAGODA_REQUEST_IGNORE_EOS;  // exactly max_tokens, so outputs compare by prefix
    c.max_tokens = max_tokens;
    c.sampling.temperature = 0.0f;
    return c;
}

// A small family of prompts: three shared stems (two blocks of 4 and more) and short tails, so
// requests share prefixes of several lengths.
std::vector<std::vector<int32_t>> prompt_family(int64_t vocab) {
    std::mt19937 rng(7);
    std::vector<std::vector<int32_t>> stems;
    for (size_t len : {9u, 6u, 13u}) {
        std::vector<int32_t> s{1};  // BOS
        for (size_t i = 1; i < len; ++i) s.push_back(int32_t(3 + rng() % uint32_t(vocab - 3)));
        stems.push_back(s);
    }
    std::vector<std::vector<int32_t>> prompts;
    for (const auto &stem : stems)
        for (size_t tail = 0; tail < 4; ++tail) {
            std::vector<int32_t> p = stem;
            for (size_t i = 0; i < tail; ++i) p.push_back(int32_t(3 + rng() % uint32_t(vocab - 3)));
            prompts.push_back(p);
        }
    return prompts;
}

// Each prompt's kMaxTokens greedy tokens, run alone on a roomy cache.
std::vector<std::vector<int32_t>> alone_outputs(const std::vector<std::vector<int32_t>> &prompts) {
    auto model = stories();
    std::vector<std::vector<int32_t>> out;
    for (const auto &p : prompts) {
        auto cache = std::make_shared<kv::KvCache>(cpu_device(), geometry(model->config(), 64, 4));
        engine::Engine e(model, stories_tokenizer(), cache, {});
        uint64_t id = e.submit_tokens(p, greedy(kMaxTokens));
        std::vector<int32_t> tokens;
        while (e.has_work()) e.step();
        engine::Output o;
        while (e.poll(o))
            if (o.request_id == id) tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
        assert_int_equal(tokens.size(), kMaxTokens);
        out.push_back(tokens);
    }
    return out;
}

struct Live {
    size_t prompt = 0;
    int32_t max_tokens = 0;
    int32_t n = 1;
    std::vector<int32_t> tokens[2];  // per sequence
    int32_t ended = 0;               // sequences whose last output came
};

void run_random_interleaving(pagoda_preemption_t preemption, unsigned seed,
                             const std::vector<std::vector<int32_t>> &prompts,
                             const std::vector<std::vector<int32_t>> &alone) {
    auto model = stories();
    kv::KvCacheOptions ko;
    ko.swap_blocks = 5;  // a third of the device pool: swap space runs out too (then recompute)
    auto cache = std::make_shared<kv::KvCache>(cpu_device(), geometry(model->config(), 14, 4), ko);
    engine::EngineConfig ec;
    ec.max_num_seqs = 6;
    ec.max_num_batched_tokens = 12;  // prompts come in chunks
    ec.preemption = preemption;
    engine::Engine e(model, stories_tokenizer(), cache, ec);

    std::mt19937 rng(seed);
    std::map<uint64_t, Live> live;
    int64_t finished = 0, aborted = 0, steps = 0, groups_failed = 0;
    auto check_output = [&](const engine::Output &o) {
        auto it = live.find(o.request_id);
        if (it == live.end()) fail_msg("output for unknown request %llu", (unsigned long long)o.request_id);
        Live &l = it->second;
        if (o.sequence_index < 0 || o.sequence_index >= l.n)
            fail_msg("request %llu: sequence_index %d", (unsigned long long)o.request_id, o.sequence_index);
        std::vector<int32_t> &tokens = l.tokens[o.sequence_index];
        tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
        const auto &want = alone[l.prompt];
        if (tokens.size() > size_t(l.max_tokens)) fail_msg("request %llu generated too much", (unsigned long long)o.request_id);
        for (size_t t = 0; t < tokens.size(); ++t)
            if (tokens[t] != want[t])
                fail_msg("request %llu (prompt %zu), sequence %d, token %zu: %d here, %d alone",
                         (unsigned long long)o.request_id, l.prompt, o.sequence_index, t, tokens[t], want[t]);
        if (o.finish_reason == PAGODA_FINISH_NONE) return;
        ++l.ended;
        if (o.finish_reason == PAGODA_FINISH_LENGTH) {
            assert_int_equal(tokens.size(), l.max_tokens);
        } else if (o.finish_reason == PAGODA_FINISH_ERROR && l.n > 1 && o.status == PAGODA_ERR_OUT_OF_MEMORY) {
            if (o.request_finished) ++groups_failed;
        } else if (o.finish_reason != PAGODA_FINISH_ABORTED) {
            fail_msg("request %llu ended with reason %d: %s", (unsigned long long)o.request_id,
                     int(o.finish_reason), o.error.c_str());
        }
        // The request's last output, and only that, says request_finished: once every sequence
        // ended, or at an abort or error (before the prompt forks there is one sequence only).
        const bool cut_short = o.finish_reason == PAGODA_FINISH_ABORTED || o.finish_reason == PAGODA_FINISH_ERROR;
        if (l.ended == l.n ? !o.request_finished : (o.request_finished && !cut_short))
            fail_msg("request %llu: request_finished %d after %d of %d sequences (reason %d)",
                     (unsigned long long)o.request_id, int(o.request_finished), l.ended, l.n, int(o.finish_reason));
        if (!o.request_finished) return;
        if (o.finish_reason == PAGODA_FINISH_LENGTH) ++finished;
        if (o.finish_reason == PAGODA_FINISH_ABORTED) ++aborted;
        live.erase(it);
    };

    for (int64_t op = 0; op < kOpsPerMode; ++op) {
        const uint32_t dice = rng() % 100;
        if (dice < 30 && live.size() < 10) {
            Live l;
            l.prompt = rng() % prompts.size();
            l.max_tokens = int32_t(1 + rng() % kMaxTokens);
            l.n = rng() % 4 == 0 ? 2 : 1;
            engine::RequestConfig config = greedy(l.max_tokens);
            config.n = l.n;
            uint64_t id = e.submit_tokens(prompts[l.prompt], config);
            live.emplace(id, std::move(l));
        } else if (dice < 38 && !live.empty()) {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            e.abort(it->first);
        } else {
            e.step();
            ++steps;
        }
        cache->check_invariants();
        engine::Output o;
        while (e.poll(o)) check_output(o);
    }
    // Drain: everything left finishes.
    while (e.has_work()) {
        e.step();
        cache->check_invariants();
        engine::Output o;
        while (e.poll(o)) check_output(o);
    }
    assert_true(live.empty());
    const kv::KvCacheStats ks = cache->stats();
    assert_int_equal(ks.blocks_used, 0);
    assert_int_equal(ks.swap_blocks_used, 0);
    const engine::EngineStats es = e.stats();
    printf("preemption %d: %lld ops (%lld steps), %lld finished, %lld aborted, preempted %lld by recompute "
           "and %lld by swap, prefix hits %lld/%lld, %lld two-sequence requests failed for want of swap space\n",
           int(preemption), (long long)kOpsPerMode, (long long)steps, (long long)finished, (long long)aborted,
           (long long)es.preemptions_recompute, (long long)es.preemptions_swap, (long long)ks.prefix_hits,
           (long long)ks.prefix_queries, (long long)groups_failed);
    assert_true(finished > 100);
    assert_true(aborted > 100);
    assert_true(ks.prefix_hits > 0);
    if (preemption == PAGODA_PREEMPT_SWAP) assert_true(es.preemptions_swap > 0);
    assert_true(es.preemptions_recompute > 0);
}

void test_random_interleavings_keep_accounting_and_outputs(void **) {
    auto start = std::chrono::steady_clock::now();
    const auto prompts = prompt_family(stories()->config().vocab_size);
    const auto alone = alone_outputs(prompts);
    run_random_interleaving(PAGODA_PREEMPT_AUTO, 1, prompts, alone);
    run_random_interleaving(PAGODA_PREEMPT_SWAP, 2, prompts, alone);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    printf("property test: %lld operations in %.1f s\n", (long long)(2 * kOpsPerMode), s);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_interleavings_keep_accounting_and_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
