/* COPY_BLOCKS and SWAP_BLOCKS on the CPU backend: copy-on-write moves the listed blocks in every
 * cache and nothing else; swapping out and back in restores the blocks; a bad launch copies
 * nothing. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { CACHES = 4, BLOCK_BYTES = 96 };

/* CACHES caches of `blocks` blocks each, filled with random bytes. */
static void make_caches(void *caches[CACHES], int blocks, test_rng_t *rng) {
    for (int c = 0; c < CACHES; ++c) {
        unsigned char *p = test_xmalloc((size_t)blocks * BLOCK_BYTES);
        for (int i = 0; i < blocks * BLOCK_BYTES; ++i) p[i] = (unsigned char)test_rng_next(rng);
        caches[c] = p;
    }
}

/* A copy of each cache's `blocks` blocks, to compare with after a launch. */
static void snapshot_caches(void *copy[CACHES], void *const caches[CACHES], int blocks) {
    for (int c = 0; c < CACHES; ++c) {
        copy[c] = test_xmalloc((size_t)blocks * BLOCK_BYTES);
        memcpy(copy[c], caches[c], (size_t)blocks * BLOCK_BYTES);
    }
}

static void free_caches(void *caches[CACHES]) {
    for (int c = 0; c < CACHES; ++c) free(caches[c]);
}

static unsigned char *block_of(void *cache, int block) {
    return (unsigned char *)cache + (size_t)block * BLOCK_BYTES;
}

static pagoda_op_copy_blocks_t copy_args(void *const *src, int64_t src_blocks, void *const *dst,
                                         int64_t dst_blocks, const int32_t *pairs, int64_t n_pairs) {
    pagoda_op_copy_blocks_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n_caches = CACHES;
    a.src_caches = src;
    a.dst_caches = dst;
    a.block_bytes = BLOCK_BYTES;
    a.n_pairs = n_pairs;
    a.block_pairs = pairs;
    a.src_num_blocks = src_blocks;
    a.dst_num_blocks = dst_blocks;
    return a;
}

/* Copy-on-write within the same caches: each destination gets its source's bytes, every other
 * block keeps its own. */
static void test_copy_on_write(void **state) {
    (void)state;
    enum { BLOCKS = 10 };
    test_rng_t rng;
    test_rng_seed(&rng, 1);
    void *caches[CACHES], *before[CACHES];
    make_caches(caches, BLOCKS, &rng);
    snapshot_caches(before, caches, BLOCKS);

    const int32_t pairs[] = {2, 7, 5, 0, 9, 3, 4, 4};
    pagoda_op_copy_blocks_t a = copy_args(caches, BLOCKS, caches, BLOCKS, pairs, 4);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_COPY_BLOCKS, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a));
    for (int c = 0; c < CACHES; ++c) {
        for (int b = 0; b < BLOCKS; ++b) {
            int src = b;
            for (int p = 0; p < 4; ++p)
                if (pairs[2 * p + 1] == b) src = pairs[2 * p];
            if (memcmp(block_of(caches[c], b), block_of(before[c], src), BLOCK_BYTES) != 0)
                fail_msg("cache %d block %d should hold the old block %d", c, b, src);
        }
    }
    free_caches(caches);
    free_caches(before);
}

/* Swap blocks out to host caches, spoil the device caches, swap them back into other blocks. */
static void test_swap_round_trip(void **state) {
    (void)state;
    enum { DEVICE_BLOCKS = 8, HOST_BLOCKS = 5 };
    test_rng_t rng;
    test_rng_seed(&rng, 2);
    void *device[CACHES], *host[CACHES], *original[CACHES];
    make_caches(device, DEVICE_BLOCKS, &rng);
    make_caches(host, HOST_BLOCKS, &rng);
    snapshot_caches(original, device, DEVICE_BLOCKS);

    const int32_t out_pairs[] = {1, 0, 6, 4, 3, 2}; /* device → host */
    pagoda_op_copy_blocks_t a = copy_args(device, DEVICE_BLOCKS, host, HOST_BLOCKS, out_pairs, 3);
    a.direction = PAGODA_SWAP_OUT;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SWAP_BLOCKS, &a));
    for (int c = 0; c < CACHES; ++c) {
        memset(device[c], 0, DEVICE_BLOCKS * BLOCK_BYTES);
        for (int p = 0; p < 3; ++p)
            assert_memory_equal(block_of(host[c], out_pairs[2 * p + 1]),
                                block_of(original[c], out_pairs[2 * p]), BLOCK_BYTES);
    }

    const int32_t in_pairs[] = {0, 2, 4, 5, 2, 7}; /* host → device, into new blocks */
    a = copy_args(host, HOST_BLOCKS, device, DEVICE_BLOCKS, in_pairs, 3);
    a.direction = PAGODA_SWAP_IN;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_SWAP_BLOCKS, &a));
    static const int restored[][2] = {{2, 1}, {5, 6}, {7, 3}}; /* device block, original block */
    for (int c = 0; c < CACHES; ++c)
        for (int p = 0; p < 3; ++p)
            assert_memory_equal(block_of(device[c], restored[p][0]),
                                block_of(original[c], restored[p][1]), BLOCK_BYTES);
    free_caches(device);
    free_caches(host);
    free_caches(original);
}

static void test_bad_launches(void **state) {
    (void)state;
    enum { BLOCKS = 6 };
    test_rng_t rng;
    test_rng_seed(&rng, 3);
    void *caches[CACHES], *before[CACHES];
    make_caches(caches, BLOCKS, &rng);
    snapshot_caches(before, caches, BLOCKS);

    /* A negative id anywhere fails before the valid pairs ahead of it are copied. */
    const int32_t pairs[] = {0, 1, 2, -4};
    pagoda_op_copy_blocks_t a = copy_args(caches, BLOCKS, caches, BLOCKS, pairs, 2);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "pair 1 has destination block -4");
    const int32_t pairs2[] = {-1, 1};
    a = copy_args(caches, BLOCKS, caches, BLOCKS, pairs2, 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_SWAP_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "pair 0 has source block -1");
    /* Ids past the caches' ends are caught before anything is copied, on either side. */
    const int32_t past_dst[] = {0, 1, 2, BLOCKS};
    a = copy_args(caches, BLOCKS, caches, BLOCKS, past_dst, 2);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "past the cache's 6 blocks");
    const int32_t past_src[] = {BLOCKS + 3, 1};
    a = copy_args(caches, BLOCKS, caches, BLOCKS, past_src, 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "source block 9");
    for (int c = 0; c < CACHES; ++c)
        assert_memory_equal(caches[c], before[c], BLOCKS * BLOCK_BYTES);

    const int32_t good_pairs[] = {0, 1};
    a = copy_args(caches, 0, caches, BLOCKS, good_pairs, 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "src_num_blocks 0");
    a = copy_args(caches, BLOCKS, caches, BLOCKS, good_pairs, 1);
    a.direction = (pagoda_swap_direction_t)7;
    test_expect_failure(test_cpu_launch(PAGODA_OP_SWAP_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "direction 7");
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_COPY_BLOCKS, &a)); /* unused there */

    a = copy_args(caches, BLOCKS, caches, BLOCKS, good_pairs, 1);
    a.block_bytes = 0;
    test_expect_failure(test_cpu_supports(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "block_bytes 0");
    a = copy_args(caches, BLOCKS, caches, BLOCKS, good_pairs, -1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "n_pairs -1");
    a = copy_args(caches, BLOCKS, caches, BLOCKS, NULL, 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "block_pairs is NULL");
    void *with_null[CACHES] = {caches[0], caches[1], NULL, caches[3]};
    a = copy_args(with_null, BLOCKS, caches, BLOCKS, good_pairs, 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_SWAP_BLOCKS, &a), PAGODA_ERR_INVALID_ARGUMENT,
                        "src_caches[2] is NULL");
    test_expect_failure(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, NULL), PAGODA_ERR_INVALID_ARGUMENT,
                        "NULL");
    for (int c = 0; c < CACHES; ++c)
        assert_memory_equal(caches[c], before[c], BLOCKS * BLOCK_BYTES);

    /* Nothing to copy: the arrays are not read. */
    a = copy_args(NULL, 1, NULL, 1, NULL, 0);
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_COPY_BLOCKS, &a));
    free_caches(caches);
    free_caches(before);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_on_write),
        cmocka_unit_test(test_swap_round_trip),
        cmocka_unit_test(test_bad_launches),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
