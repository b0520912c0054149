// The KV cache on the CPU backend: reference counts and fork, copy-on-write of the shared
// partial block (its bytes checked), prefix-cache hits, misses, forced hash collisions and LRU
// eviction, swap out and in (data round trip), and the accounting invariants after each step.
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "common/error.hpp"
#include "kv/kv_cache.hpp"
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

using pagoda::kv::KvCache;
using pagoda::kv::KvCacheOptions;
using pagoda::kv::KvGeometry;

namespace {

std::shared_ptr<const pagoda::runtime::Device> cpu_device() {
    static pagoda_backend_t *backend = nullptr;
    if (backend == nullptr &&
        pagoda_backend_load(PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so", "threads=1", &backend) != PAGODA_OK)
        fail_msg("loading the CPU backend failed: %s", pagoda_last_error_message());
    return std::make_shared<pagoda::runtime::Device>(backend, 0);
}

KvGeometry small_geometry(int64_t num_blocks) {
    KvGeometry g;
    g.dtype = PAGODA_DTYPE_F32;
    g.block_size = 4;
    g.num_blocks = num_blocks;
    g.n_layers = 2;
    g.n_kv_heads = 2;
    g.head_dim = 3;
    return g;
}

std::unique_ptr<KvCache> make_cache(int64_t num_blocks, int64_t swap_blocks = 0,
                                    pagoda::kv::BlockHashFn hash = pagoda::kv::default_block_hash) {
    KvCacheOptions o;
    o.swap_blocks = swap_blocks;
    o.hash = hash;
    return std::make_unique<KvCache>(cpu_device(), small_geometry(num_blocks), o);
}

// Block `block` of every pool, as floats (the CPU device's memory is host memory).
float *block_data(const KvCache &c, size_t pool, int32_t block) {
    const auto &p = c.pools()[pool / 2];
    char *base = static_cast<char *>(pool % 2 == 0 ? p.k : p.v);
    return reinterpret_cast<float *>(base + c.geometry().block_bytes() * static_cast<size_t>(block));
}
size_t floats_per_block(const KvCache &c) { return c.geometry().block_bytes() / sizeof(float); }

// Writes a pattern unique to (pool, block, seed) into a block of every pool.
void fill_block(const KvCache &c, int32_t block, float seed) {
    for (size_t pool = 0; pool < 2 * static_cast<size_t>(c.geometry().n_layers); ++pool) {
        float *d = block_data(c, pool, block);
        for (size_t i = 0; i < floats_per_block(c); ++i) d[i] = seed + 1000.0f * float(pool) + float(i);
    }
}
bool block_holds(const KvCache &c, int32_t block, float seed) {
    for (size_t pool = 0; pool < 2 * static_cast<size_t>(c.geometry().n_layers); ++pool) {
        const float *d = block_data(c, pool, block);
        for (size_t i = 0; i < floats_per_block(c); ++i)
            if (d[i] != seed + 1000.0f * float(pool) + float(i)) return false;
    }
    return true;
}

std::function<int64_t(int64_t)> plus(int64_t n) {
    return [n](int64_t cached) { return cached + n; };
}

std::vector<int32_t> iota_tokens(size_t n, int32_t first) {
    std::vector<int32_t> t(n);
    std::iota(t.begin(), t.end(), first);
    return t;
}

// Computes `tokens` into a new sequence `seq` (as the engine does) and releases it, so its
// full blocks stay cached.
void compute_and_release(KvCache &c, uint64_t seq, const std::vector<int32_t> &tokens) {
    assert_true(c.admit(seq, tokens, 0, [&](int64_t) { return int64_t(tokens.size()); }) == 0);
    c.set_tokens(seq, int64_t(tokens.size()), tokens);
    c.check_invariants();
    c.release(seq);
    c.check_invariants();
}

void test_refcounts_fork_and_copy_on_write(void **) {
    auto c = make_cache(8);
    assert_true(c->reserve(1, 6));  // two blocks, the second half full
    c->set_tokens(1, 6);
    const std::vector<int32_t> parent = c->table(1);
    fill_block(*c, parent[0], 1.0f);
    fill_block(*c, parent[1], 2.0f);
    c->fork(1, 2);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_used, 2);
    assert_int_equal(c->stats().slots_used, 6);  // shared blocks counted once
    assert_int_equal(c->stats().slots_wasted, 2);

    // The child appends: its partial last block is shared, so it gets a copy first.
    assert_true(c->reserve(2, 7));
    c->check_invariants();
    const std::vector<int32_t> child = c->table(2);
    assert_int_equal(child[0], parent[0]);
    assert_int_not_equal(child[1], parent[1]);
    assert_true(block_holds(*c, child[1], 2.0f));  // COPY_BLOCKS copied every layer's K and V
    assert_true(block_holds(*c, parent[1], 2.0f));
    assert_int_equal(c->stats().blocks_used, 3);
    // Now the parent's last block is its own again: appending copies nothing.
    assert_true(c->reserve(1, 8));
    assert_int_equal(c->table(1)[1], parent[1]);

    // A fork whose last block is full shares everything and copies nothing on growth.
    c->set_tokens(1, 8);
    c->fork(1, 3);
    assert_true(c->reserve(3, 9));
    assert_int_equal(c->table(3)[1], parent[1]);
    assert_int_equal(c->table(3).size(), 3);
    c->check_invariants();

    for (uint64_t s : {1, 2, 3}) c->release(s);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_used, 0);
    assert_int_equal(c->free_blocks(), 8);
}

void test_all_or_nothing(void **) {
    auto c = make_cache(3);
    assert_true(c->reserve(1, 8));
    assert_false(c->reserve(2, 8));  // needs 2, 1 free: nothing taken
    assert_int_equal(c->table(2).size(), 0);
    assert_int_equal(c->free_blocks(), 1);
    c->set_tokens(1, 6);
    c->fork(1, 2);
    assert_false(c->reserve(2, 13));  // copy-on-write + 2 new blocks > 1 free
    assert_int_equal(c->table(2)[1], c->table(1)[1]);
    c->check_invariants();
    assert_true(c->reserve(2, 7));  // the copy alone fits
    c->check_invariants();
    c->release(1);
    c->release(2);
    c->check_invariants();
}

void test_prefix_hits_and_misses(void **) {
    auto c = make_cache(16);
    const std::vector<int32_t> a = iota_tokens(13, 100);  // 3 full blocks + 1 token
    compute_and_release(*c, 1, a);
    assert_int_equal(c->stats().blocks_cached, 3);  // the partial block was freed
    assert_int_equal(c->stats().blocks_used, 0);

    // The same prompt: the three full blocks, verified, shared and skipped.
    assert_int_equal(c->admit(2, a, int64_t(a.size()) - 1, plus(1)), 12);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_cached, 0);
    assert_int_equal(c->stats().prefix_queries, 3);
    assert_int_equal(c->stats().prefix_hits, 3);
    // A prompt that ends on a block boundary keeps its last token to compute: 2 blocks hit.
    std::vector<int32_t> b(a.begin(), a.begin() + 12);
    assert_int_equal(c->admit(3, b, int64_t(b.size()) - 1, plus(1)), 8);
    assert_int_equal(c->table(3)[0], c->table(2)[0]);
    c->check_invariants();
    // A different second block: only the first hits; a different adapter: none.
    std::vector<int32_t> d = a;
    d[5] = 7;
    assert_int_equal(c->admit(4, d, 12, plus(1)), 4);
    assert_int_equal(c->admit(5, a, 12, plus(1), true, /*extra_key=*/9), 0);
    // No lookup asked (prompt log-probabilities) and no sharing (contiguous): no hit.
    assert_int_equal(c->admit(6, a, 0, plus(13)), 0);
    assert_int_equal(c->admit(7, a, 12, plus(13), /*share_prefix=*/false), 0);
    c->check_invariants();
    for (uint64_t s = 2; s <= 7; ++s) c->release(s);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_used, 0);
}

uint64_t constant_hash(uint64_t, std::span<const int32_t>, uint64_t) { return 42; }

void test_hash_collisions_miss(void **) {
    auto c = make_cache(16, 0, constant_hash);
    const std::vector<int32_t> a = iota_tokens(9, 1);
    compute_and_release(*c, 1, a);
    // Every key is 42: only a's first block could be registered.
    assert_int_equal(c->stats().blocks_cached, 1);
    std::vector<int32_t> b = a;
    b[0] = 50;  // same key, other tokens: a miss, never a's keys and values
    assert_int_equal(c->admit(2, b, 8, plus(1)), 0);
    assert_int_equal(c->admit(3, a, 8, plus(1)), 4);
    c->check_invariants();
    for (uint64_t s : {2, 3}) c->release(s);

    // Chains: x's second block registered after x's first; y shares x's second block's tokens
    // but not its first, and with every key equal must still miss there.
    auto e = make_cache(16, 0, constant_hash);
    const std::vector<int32_t> x = iota_tokens(8, 1);
    assert_true(e->admit(1, x, 0, plus(8)) == 0);
    e->set_tokens(1, 8, x);
    std::vector<int32_t> y = x;
    y[0] = 77;
    assert_int_equal(e->admit(2, y, 8, plus(1)), 0);
    e->release(1);
    e->release(2);
    e->check_invariants();
}

void test_lru_eviction(void **) {
    auto c = make_cache(4);
    const std::vector<int32_t> a = iota_tokens(8, 10), b = iota_tokens(8, 50);
    compute_and_release(*c, 1, a);
    compute_and_release(*c, 2, b);
    assert_int_equal(c->stats().blocks_cached, 4);
    assert_int_equal(c->free_blocks(), 4);  // cached blocks are allocatable
    // One new block evicts the least recently used: a's tail (released tail first).
    assert_true(c->reserve(3, 1));
    c->check_invariants();
    assert_int_equal(c->stats().blocks_cached, 3);
    assert_int_equal(c->admit(4, a, 8, plus(0)), 4);  // a's root survived
    assert_int_equal(c->admit(5, b, 8, plus(0)), 8);  // b untouched
    c->check_invariants();
    // Everything held: no block left to evict.
    assert_false(c->reserve(6, 5));
    for (uint64_t s : {3, 4, 5}) c->release(s);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_used, 0);
}

void test_swap_round_trip(void **) {
    auto c = make_cache(6, 3);
    assert_int_equal(c->stats().swap_blocks_total, 3);
    assert_true(c->reserve(1, 10));  // 3 blocks
    c->set_tokens(1, 10);
    const std::vector<int32_t> before = c->table(1);
    for (size_t i = 0; i < before.size(); ++i) fill_block(*c, before[i], float(10 * (i + 1)));
    assert_true(c->swap_out(1));
    c->check_invariants();
    assert_true(c->is_swapped(1));
    assert_int_equal(c->stats().swap_blocks_used, 3);
    assert_int_equal(c->stats().blocks_used, 0);
    assert_int_equal(c->table(1).size(), 0);

    // Another sequence scribbles over the device blocks meanwhile.
    assert_true(c->reserve(2, 24));
    for (int32_t b : c->table(2)) fill_block(*c, b, -1.0f);
    assert_false(c->swap_in(1, 10));  // no device blocks: nothing changes
    assert_true(c->is_swapped(1));
    // No room in swap space for a second sequence either.
    assert_false(c->swap_out(2));
    c->check_invariants();
    c->release(2);

    assert_true(c->swap_in(1, 11));
    c->check_invariants();
    const std::vector<int32_t> after = c->table(1);
    assert_int_equal(after.size(), 3);
    for (size_t i = 0; i < after.size(); ++i) assert_true(block_holds(*c, after[i], float(10 * (i + 1))));
    assert_int_equal(c->stats().swap_blocks_used, 0);

    // Releasing a swapped sequence frees its swap blocks.
    assert_true(c->swap_out(1));
    c->release(1);
    c->check_invariants();
    assert_int_equal(c->stats().swap_blocks_used, 0);
    assert_int_equal(c->stats().sequences, 0);
}

// A forked group swaps as one: shared blocks are copied once, stay shared on the host and come
// back shared, so copy-on-write still applies after the round trip.
void test_group_swap_keeps_sharing(void **) {
    auto c = make_cache(12, 6);
    assert_true(c->reserve(1, 10));  // 3 blocks of 4, the last one half full
    c->set_tokens(1, 10);
    for (size_t i = 0; i < 3; ++i) fill_block(*c, c->table(1)[i], float(i + 1));
    c->fork(1, 2);
    c->fork(1, 3);
    assert_true(c->reserve(2, 14));  // copy-on-write of the partial block, then a new one
    c->set_tokens(2, 14);
    fill_block(*c, c->table(2)[3], 40.0f);
    c->check_invariants();
    assert_int_equal(c->stats().blocks_used, 5);  // 3 shared + 2 of sequence 2

    // Alone, each sequence would need 3 + 4 + 3 = 10 swap blocks; the group needs 5.
    const std::vector<uint64_t> group = {1, 2, 3};
    assert_true(c->swap_out(group));
    c->check_invariants();
    assert_int_equal(c->stats().swap_blocks_used, 5);
    assert_int_equal(c->stats().blocks_used, 0);

    // Back with room for the tokens each holds: the 5 distinct blocks, shared as before.
    const std::vector<int64_t> tokens = {10, 14, 10};
    assert_true(c->swap_in(group, tokens));
    c->check_invariants();
    assert_int_equal(c->stats().swap_blocks_used, 0);
    assert_int_equal(c->stats().blocks_used, 5);
    assert_true(c->table(1) == c->table(3));
    for (size_t i = 0; i < 2; ++i) assert_int_equal(c->table(1)[i], c->table(2)[i]);
    for (size_t i = 0; i < 3; ++i) assert_true(block_holds(*c, c->table(1)[i], float(i + 1)));
    assert_true(block_holds(*c, c->table(2)[3], 40.0f));
    // Sequence 3 appends: its shared partial block is copied, sequence 1 keeps the original.
    assert_true(c->reserve(3, 11));
    assert_int_not_equal(c->table(3)[2], c->table(1)[2]);
    assert_true(block_holds(*c, c->table(3)[2], 3.0f));
    c->check_invariants();

    // All or nothing: a swap space too small for the group's distinct blocks refuses it whole.
    assert_true(c->reserve(4, 24));  // 6 more blocks
    c->set_tokens(4, 24);
    const std::vector<uint64_t> big = {1, 4};
    assert_false(c->swap_out(big));
    assert_false(c->is_swapped(1));
    c->check_invariants();
    // Releasing swapped members one by one frees a shared swap block with its last holder.
    assert_true(c->swap_out(group));
    c->release(1);
    // Left: the 2 blocks 2 and 3 share, 2 of 2's own and 1 of 3's (its copy-on-write block).
    assert_int_equal(c->stats().swap_blocks_used, 5);
    c->release(3);
    c->release(2);
    c->release(4);
    c->check_invariants();
    assert_int_equal(c->stats().swap_blocks_used, 0);
    assert_int_equal(c->stats().blocks_used, 0);
}

void test_misuse_is_internal_error(void **) {
    auto c = make_cache(4);
    assert_true(c->reserve(1, 4));
    try {
        c->set_tokens(1, 5);
        fail_msg("set_tokens past the capacity did not throw");
    } catch (const pagoda::Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INTERNAL);
    }
    try {
        c->swap_in(1, 4);
        fail_msg("swap_in of a resident sequence did not throw");
    } catch (const pagoda::Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INTERNAL);
    }
    c->release(1);
    c->check_invariants();
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refcounts_fork_and_copy_on_write),
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_prefix_hits_and_misses),
        cmocka_unit_test(test_hash_collisions_miss),
        cmocka_unit_test(test_lru_eviction),
        cmocka_unit_test(test_swap_round_trip),
        cmocka_unit_test(test_group_swap_keeps_sharing),
        cmocka_unit_test(test_misuse_is_internal_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
