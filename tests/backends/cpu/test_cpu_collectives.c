/* The CPU backend's collectives with ranks as threads: every collective against a plain
 * computation of what each rank must hold, for several rank counts, types and reductions. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define MAX_RANKS 4
#define COUNT 1003 /* not a multiple of the rank counts, so slices are uneven */

typedef struct rank_ctx {
    int32_t rank, n_ranks;
    const pagoda_comm_unique_id_t *id;
    pagoda_status_t status;   /* first failure, for the main thread to report */
    char message[256];
    int mismatches;
} rank_ctx_t;

static const pagoda_backend_collectives_t *coll(void) { return test_cpu_iface()->collectives; }

/* The value rank r contributes at element i: distinct per rank and element, exact in f32. */
static float contribution(int32_t r, size_t i) { return (float)((int)(i % 97) - 40) * 0.25f + (float)r * 3.0f; }

#define RANK_CHECK(ctx, expr)                                                          \
    do {                                                                               \
        pagoda_status_t s_ = (expr);                                                   \
        if (s_ != PAGODA_OK && (ctx)->status == PAGODA_OK) {                           \
            (ctx)->status = s_;                                                        \
            snprintf((ctx)->message, sizeof (ctx)->message, "%s: %s", #expr,          \
                     pagoda_last_error_message());                                     \
        }                                                                              \
    } while (0)

static void *rank_main(void *arg) {
    rank_ctx_t *ctx = (rank_ctx_t *)arg;
    const pagoda_backend_iface_t *iface = test_cpu_iface();
    void *self = iface->self;
    pagoda_backend_comm_t *comm = NULL;
    RANK_CHECK(ctx, coll()->comm_create(self, 0, ctx->id, ctx->n_ranks, ctx->rank, &comm));
    if (comm == NULL) return NULL;
    pagoda_backend_stream_t *stream = NULL;
    RANK_CHECK(ctx, iface->stream_create(self, 0, &stream));
    const int32_t n = ctx->n_ranks, me = ctx->rank;

    float *send = malloc(sizeof(float) * COUNT * MAX_RANKS);
    float *recv = malloc(sizeof(float) * COUNT * MAX_RANKS);
    for (size_t i = 0; i < (size_t)COUNT * n; ++i) send[i] = contribution(me, i);

    /* all_reduce sum, out of place and in place; max. */
    RANK_CHECK(ctx, coll()->all_reduce(self, comm, stream, send, recv, COUNT, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM));
    for (size_t i = 0; i < COUNT; ++i) {
        double want = 0;
        for (int32_t r = 0; r < n; ++r) want += contribution(r, i);
        if (recv[i] != (float)want) ctx->mismatches++;
    }
    memcpy(recv, send, sizeof(float) * COUNT);
    RANK_CHECK(ctx, coll()->all_reduce(self, comm, stream, recv, recv, COUNT, PAGODA_DTYPE_F32, PAGODA_REDUCE_MAX));
    for (size_t i = 0; i < COUNT; ++i)
        if (recv[i] != contribution(n - 1, i)) ctx->mismatches++;

    /* all_reduce of bf16 values (reduced in f32, stored as bf16) and of i64. */
    uint16_t hsend[COUNT], hrecv[COUNT];
    for (size_t i = 0; i < COUNT; ++i) hsend[i] = test_f32_to_bf16(contribution(me, i));
    RANK_CHECK(ctx, coll()->all_reduce(self, comm, stream, hsend, hrecv, COUNT, PAGODA_DTYPE_BF16, PAGODA_REDUCE_SUM));
    for (size_t i = 0; i < COUNT; ++i) {
        double want = 0;
        for (int32_t r = 0; r < n; ++r) want += test_bf16_to_f32(test_f32_to_bf16(contribution(r, i)));
        if (fabs(test_bf16_to_f32(hrecv[i]) - want) > 1e-2 * (fabs(want) + 1)) ctx->mismatches++;
    }
    int64_t lsend[COUNT], lrecv[COUNT];
    for (size_t i = 0; i < COUNT; ++i) lsend[i] = (int64_t)i * 1000000007LL + me;
    RANK_CHECK(ctx, coll()->all_reduce(self, comm, stream, lsend, lrecv, COUNT, PAGODA_DTYPE_I64, PAGODA_REDUCE_MIN));
    for (size_t i = 0; i < COUNT; ++i)
        if (lrecv[i] != (int64_t)i * 1000000007LL) ctx->mismatches++;

    /* all_gather: rank r's block lands at r·COUNT everywhere. */
    RANK_CHECK(ctx, coll()->all_gather(self, comm, stream, send, recv, COUNT, PAGODA_DTYPE_F32));
    for (int32_t r = 0; r < n; ++r)
        for (size_t i = 0; i < COUNT; ++i)
            if (recv[(size_t)r * COUNT + i] != contribution(r, i)) ctx->mismatches++;

    /* reduce_scatter: rank r gets slice r of the sum of all sends (n·COUNT each). */
    RANK_CHECK(ctx, coll()->reduce_scatter(self, comm, stream, send, recv, COUNT, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM));
    for (size_t i = 0; i < COUNT; ++i) {
        double want = 0;
        for (int32_t r = 0; r < n; ++r) want += contribution(r, (size_t)me * COUNT + i);
        if (recv[i] != (float)want) ctx->mismatches++;
    }

    /* broadcast from the last rank. */
    RANK_CHECK(ctx, coll()->broadcast(self, comm, stream, send, recv, COUNT, PAGODA_DTYPE_F32, n - 1));
    for (size_t i = 0; i < COUNT; ++i)
        if (recv[i] != contribution(n - 1, i)) ctx->mismatches++;

    /* A ring of send/recv inside a group: everyone sends right and receives from the left. */
    if (n > 1) {
        RANK_CHECK(ctx, coll()->group_start(self));
        RANK_CHECK(ctx, coll()->send(self, comm, stream, send, COUNT, PAGODA_DTYPE_F32, (me + 1) % n));
        RANK_CHECK(ctx, coll()->recv(self, comm, stream, recv, COUNT, PAGODA_DTYPE_F32, (me + n - 1) % n));
        RANK_CHECK(ctx, coll()->group_end(self));
        for (size_t i = 0; i < COUNT; ++i)
            if (recv[i] != contribution((me + n - 1) % n, i)) ctx->mismatches++;
    }

    free(send);
    free(recv);
    iface->stream_destroy(self, stream);
    coll()->comm_destroy(self, comm);
    return NULL;
}

static void run_ranks(int32_t n_ranks) {
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll()->get_unique_id(test_cpu_iface()->self, &id));
    pthread_t threads[MAX_RANKS];
    rank_ctx_t ctx[MAX_RANKS];
    memset(ctx, 0, sizeof ctx);
    for (int32_t r = 0; r < n_ranks; ++r) {
        ctx[r].rank = r;
        ctx[r].n_ranks = n_ranks;
        ctx[r].id = &id;
        assert_int_equal(pthread_create(&threads[r], NULL, rank_main, &ctx[r]), 0);
    }
    for (int32_t r = 0; r < n_ranks; ++r) pthread_join(threads[r], NULL);
    for (int32_t r = 0; r < n_ranks; ++r) {
        if (ctx[r].status != PAGODA_OK)
            fail_msg("rank %d of %d: %s", r, n_ranks, ctx[r].message);
        if (ctx[r].mismatches != 0)
            fail_msg("rank %d of %d: %d wrong elements", r, n_ranks, ctx[r].mismatches);
    }
}

static void test_one_rank(void **state) { (void)state; run_ranks(1); }
static void test_two_ranks(void **state) { (void)state; run_ranks(2); }
static void test_three_ranks(void **state) { (void)state; run_ranks(3); }
static void test_four_ranks(void **state) { (void)state; run_ranks(4); }

/* A rank waiting in a collective fails cleanly when the communicator is aborted. */
typedef struct abort_ctx {
    pagoda_backend_comm_t *comm;
    pagoda_status_t status;
} abort_ctx_t;

static void *wait_in_all_reduce(void *arg) {
    abort_ctx_t *ctx = (abort_ctx_t *)arg;
    const pagoda_backend_iface_t *iface = test_cpu_iface();
    pagoda_backend_stream_t *stream = NULL;
    iface->stream_create(iface->self, 0, &stream);
    float x[4] = {1, 2, 3, 4};
    ctx->status = coll()->all_reduce(iface->self, ctx->comm, stream, x, x, 4, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM);
    iface->stream_destroy(iface->self, stream);
    return NULL;
}

static void *join_rank(void *arg) {
    void **slots = (void **)arg;
    coll()->comm_create(test_cpu_iface()->self, 0, (const pagoda_comm_unique_id_t *)slots[0], 2,
                        (int32_t)(intptr_t)slots[1], (pagoda_backend_comm_t **)slots[2]);
    return NULL;
}

static void test_abort_wakes_waiting_rank(void **state) {
    (void)state;
    void *self = test_cpu_iface()->self;
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll()->get_unique_id(self, &id));
    pagoda_backend_comm_t *c0 = NULL, *c1 = NULL;
    void *a0[3] = {&id, (void *)(intptr_t)0, &c0}, *a1[3] = {&id, (void *)(intptr_t)1, &c1};
    pthread_t t0, t1;
    pthread_create(&t0, NULL, join_rank, a0);
    pthread_create(&t1, NULL, join_rank, a1);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    assert_non_null(c0);
    assert_non_null(c1);
    /* Only rank 0 enters the collective; rank 1 aborts instead of joining it. */
    abort_ctx_t ctx = {c0, PAGODA_OK};
    pthread_t waiter;
    pthread_create(&waiter, NULL, wait_in_all_reduce, &ctx);
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    pagoda_status_t async = PAGODA_ERR_INTERNAL;
    TEST_ASSERT_OK(coll()->comm_get_async_error(self, c1, &async));
    assert_int_equal(async, PAGODA_OK);
    TEST_ASSERT_OK(coll()->comm_abort(self, c1));
    pthread_join(waiter, NULL);
    assert_int_equal(ctx.status, PAGODA_ERR_BACKEND);
    /* Both ranks' communicators report the abort without blocking. */
    TEST_ASSERT_OK(coll()->comm_get_async_error(self, c0, &async));
    assert_int_equal(async, PAGODA_ERR_BACKEND);
    coll()->comm_destroy(self, c0);
    coll()->comm_destroy(self, c1);
}

static void test_bad_arguments(void **state) {
    (void)state;
    void *self = test_cpu_iface()->self;
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll()->get_unique_id(self, &id));
    pagoda_backend_comm_t *comm = NULL;
    assert_int_equal(coll()->comm_create(self, 0, &id, 2, 2, &comm), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "rank 2 of 2"));
    assert_int_equal(coll()->comm_create(self, 1, &id, 1, 0, &comm), PAGODA_ERR_NOT_FOUND);
    TEST_ASSERT_OK(coll()->comm_create(self, 0, &id, 1, 0, &comm));
    pagoda_backend_stream_t *stream = test_stream_create(test_cpu_iface());
    float x[2] = {0};
    assert_int_equal(coll()->all_reduce(self, comm, stream, x, x, 2, PAGODA_DTYPE_U8, PAGODA_REDUCE_SUM),
                     PAGODA_ERR_UNSUPPORTED);
    assert_int_equal(coll()->broadcast(self, comm, stream, x, x, 2, PAGODA_DTYPE_F32, 3),
                     PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(coll()->send(self, comm, stream, x, 2, PAGODA_DTYPE_F32, 0),
                     PAGODA_ERR_INVALID_ARGUMENT); /* no other rank to send to */
    test_stream_destroy(test_cpu_iface(), stream);
    coll()->comm_destroy(self, comm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_abort_wakes_waiting_rank),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
