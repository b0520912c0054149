/* COPY_BLOCKS and SWAP_BLOCKS cases: several caches per launch, block sizes from a few bytes to
 * megabytes, chains within one launch (a→b then b→c reads b as written), copies within one set
 * of caches and between two, swaps out to pinned host memory and back in, chained launches of
 * all three, and ids past a pool (refused, nothing copied). Every byte must match. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Random bytes, eight per draw (caches here reach tens of megabytes). */
static void *random_bytes(test_rng_t *rng, size_t n) {
    unsigned char *p = test_xmalloc(n);
    for (size_t i = 0; i < n; i += 8) {
        const uint64_t r = test_rng_next(rng);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
    return p;
}

/* `n_pairs` pairs over pools of `src_blocks` and `dst_blocks`; with `chain`, each pair's source
 * is often the previous pair's destination (valid when both sides are the same caches). */
static int32_t *make_pairs(test_rng_t *rng, int64_t n_pairs, int64_t src_blocks,
                           int64_t dst_blocks, int chain) {
    int32_t *pairs = test_xmalloc((size_t)(n_pairs ? 2 * n_pairs : 1) * sizeof *pairs);
    for (int64_t p = 0; p < n_pairs; ++p) {
        pairs[2 * p] = (int32_t)test_rng_int(rng, 0, src_blocks - 1);
        if (chain && p > 0 && p % 2 == 1) pairs[2 * p] = pairs[2 * p - 1];
        pairs[2 * p + 1] = (int32_t)test_rng_int(rng, 0, dst_blocks - 1);
    }
    return pairs;
}

/* Adds `n` caches of `blocks` blocks, in `place`, compared byte for byte; returns the first
 * tensor's index (the others follow). */
static int add_caches(conf_case_t *c, test_rng_t *rng, const char *name, int n, int64_t blocks,
                      int64_t block_bytes, conf_place_t place) {
    int first = -1;
    for (int i = 0; i < n; ++i) {
        const size_t bytes = (size_t)(blocks * block_bytes);
        int t = conf_add_tensor(c, name, random_bytes(rng, bytes), bytes, place, CONF_EXACT, 0);
        if (first < 0) first = t;
    }
    return first;
}

static pagoda_op_copy_blocks_t *add_copy_step(conf_case_t *c, pagoda_op_t op, int n_caches,
                                              int64_t block_bytes, int64_t n_pairs,
                                              const int32_t *pairs, int64_t src_blocks,
                                              int64_t dst_blocks) {
    pagoda_op_copy_blocks_t *a = &conf_add_step(c, op)->copy;
    a->n_caches = n_caches;
    a->block_bytes = block_bytes;
    a->n_pairs = n_pairs;
    a->block_pairs = pairs;
    a->src_num_blocks = src_blocks;
    a->dst_num_blocks = dst_blocks;
    return a;
}

/* COPY_BLOCKS: within one set of caches (`same`) or from one set to another. `bad` puts an id
 * past the source pool in the last pair. */
static void copy_case(test_rng_t *rng, int n_caches, int64_t block_bytes, int64_t n_pairs,
                      int same, int bad, conf_tally_t *tally) {
    const int64_t src_blocks = test_rng_int(rng, 2, 12);
    const int64_t dst_blocks = same ? src_blocks : test_rng_int(rng, 2, 12);
    conf_case_t c;
    conf_case_init(&c, "copy_blocks caches=%d block_bytes=%lld pairs=%lld %s%s", n_caches,
                   (long long)block_bytes, (long long)n_pairs, same ? "in place, chained" : "between caches",
                   bad ? ", with an id past the pool" : "");
    int32_t *pairs = conf_own(&c, make_pairs(rng, n_pairs, src_blocks, dst_blocks, same));
    if (bad && n_pairs > 0) {
        pairs[2 * (n_pairs - 1)] = (int32_t)src_blocks;
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    }
    add_copy_step(&c, PAGODA_OP_COPY_BLOCKS, n_caches, block_bytes, n_pairs, pairs, src_blocks,
                  dst_blocks);
    const int src = add_caches(&c, rng, "src cache", n_caches, src_blocks, block_bytes, CONF_DEVICE);
    const int dst = same ? src
                         : add_caches(&c, rng, "dst cache", n_caches, dst_blocks, block_bytes,
                                      CONF_DEVICE);
    for (int i = 0; i < n_caches; ++i) {
        conf_bind_cache(&c, 0, src + i, 0, (size_t)i);
        conf_bind_cache(&c, 0, dst + i, 1, (size_t)i);
    }
    conf_check_case(&c, tally);
}

/* SWAP_BLOCKS out to pinned host caches, back in to other device blocks, then a COPY_BLOCKS
 * among the device blocks: three launches on one stream, each reading the last one's result. */
static void swap_chain_case(test_rng_t *rng, int n_caches, int64_t block_bytes, int64_t n_pairs,
                            conf_tally_t *tally) {
    const int64_t dev_blocks = test_rng_int(rng, 3, 16), host_blocks = test_rng_int(rng, 2, 10);
    conf_case_t c;
    conf_case_init(&c, "swap out, swap in, copy: caches=%d block_bytes=%lld pairs=%lld",
                   n_caches, (long long)block_bytes, (long long)n_pairs);
    int32_t *out_pairs = conf_own(&c, make_pairs(rng, n_pairs, dev_blocks, host_blocks, 0));
    int32_t *in_pairs = conf_own(&c, make_pairs(rng, n_pairs, host_blocks, dev_blocks, 0));
    int32_t *copy_pairs = conf_own(&c, make_pairs(rng, n_pairs, dev_blocks, dev_blocks, 1));
    pagoda_op_copy_blocks_t *out = add_copy_step(&c, PAGODA_OP_SWAP_BLOCKS, n_caches, block_bytes,
                                                 n_pairs, out_pairs, dev_blocks, host_blocks);
    out->direction = PAGODA_SWAP_OUT;
    pagoda_op_copy_blocks_t *in = add_copy_step(&c, PAGODA_OP_SWAP_BLOCKS, n_caches, block_bytes,
                                                n_pairs, in_pairs, host_blocks, dev_blocks);
    in->direction = PAGODA_SWAP_IN;
    add_copy_step(&c, PAGODA_OP_COPY_BLOCKS, n_caches, block_bytes, n_pairs, copy_pairs,
                  dev_blocks, dev_blocks);
    const int dev = add_caches(&c, rng, "device cache", n_caches, dev_blocks, block_bytes, CONF_DEVICE);
    const int host = add_caches(&c, rng, "host cache", n_caches, host_blocks, block_bytes,
                                CONF_HOST_PINNED);
    for (int i = 0; i < n_caches; ++i) {
        conf_bind_cache(&c, 0, dev + i, 0, (size_t)i);
        conf_bind_cache(&c, 0, host + i, 1, (size_t)i);
        conf_bind_cache(&c, 1, host + i, 0, (size_t)i);
        conf_bind_cache(&c, 1, dev + i, 1, (size_t)i);
        conf_bind_cache(&c, 2, dev + i, 0, (size_t)i);
        conf_bind_cache(&c, 2, dev + i, 1, (size_t)i);
    }
    conf_check_case(&c, tally);
}

/* One SWAP_BLOCKS with a bad host id: refused before anything moves. */
static void swap_bad_case(test_rng_t *rng, pagoda_swap_direction_t direction, conf_tally_t *tally) {
    const int64_t dev_blocks = 6, host_blocks = 4, block_bytes = 256, n_pairs = 3;
    conf_case_t c;
    conf_case_init(&c, "swap %s with an id past the host pool",
                   direction == PAGODA_SWAP_OUT ? "out" : "in");
    const int out = direction == PAGODA_SWAP_OUT;
    int32_t *pairs = conf_own(&c, make_pairs(rng, n_pairs, out ? dev_blocks : host_blocks,
                                             out ? host_blocks : dev_blocks, 0));
    pairs[out ? 3 : 2] = (int32_t)host_blocks; /* the host side of the second pair */
    c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    pagoda_op_copy_blocks_t *a =
        add_copy_step(&c, PAGODA_OP_SWAP_BLOCKS, 2, block_bytes, n_pairs, pairs,
                      out ? dev_blocks : host_blocks, out ? host_blocks : dev_blocks);
    a->direction = direction;
    const int dev = add_caches(&c, rng, "device cache", 2, dev_blocks, block_bytes, CONF_DEVICE);
    const int host = add_caches(&c, rng, "host cache", 2, host_blocks, block_bytes, CONF_HOST_PINNED);
    for (int i = 0; i < 2; ++i) {
        conf_bind_cache(&c, 0, out ? dev + i : host + i, 0, (size_t)i);
        conf_bind_cache(&c, 0, out ? host + i : dev + i, 1, (size_t)i);
    }
    conf_check_case(&c, tally);
}

void conf_cases_copy_blocks(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x636f7079ull);
    static const int64_t block_bytes[] = {1, 4, 96, 4096, 65536, 2 * 16 * 128 * 8 + 2, 1 << 20};
    for (int i = 0; i < 28; ++i)
        copy_case(&rng, (int)test_rng_int(&rng, 1, 4), block_bytes[i % 7],
                  test_rng_int(&rng, 0, 12), i % 2, 0, tally);
    for (int i = 0; i < 14; ++i)
        swap_chain_case(&rng, (int)test_rng_int(&rng, 1, 4), block_bytes[i % 7],
                        test_rng_int(&rng, 1, 8), tally);
    copy_case(&rng, 2, 512, 5, 0, 1, tally);
    copy_case(&rng, 3, 64, 4, 1, 1, tally);
    swap_bad_case(&rng, PAGODA_SWAP_OUT, tally);
    swap_bad_case(&rng, PAGODA_SWAP_IN, tally);
}
