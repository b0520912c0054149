/* The CPU backend's collectives with ranks as threads of one process, as processes of one
 * machine (shared memory), and over the network (Gloo over TCP, here between processes or
 * threads of this machine): every collective against a plain computation of what each rank must
 * hold, for several rank counts, types and reductions; a rank that dies or stops answering
 * fails its peers in bounded time, naming it. Process ranks are this executable run again with
 * --rank. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_RANKS 4
#define COUNT 1003 /* not a multiple of the rank counts, so slices are uneven */

/* Elements of the large all-reduce and message between processes: more than a rank's staging
 * slot and a channel's ring hold, so both go in pieces. */
#define BIG_COUNT 3000017

typedef struct rank_ctx {
    int32_t rank, n_ranks;
    int big; /* also the large all-reduce and ring of messages */
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
    if (ctx->big) {
        float *big = malloc(sizeof(float) * BIG_COUNT), *got = malloc(sizeof(float) * BIG_COUNT);
        for (size_t i = 0; i < BIG_COUNT; ++i) big[i] = contribution(me, i);
        RANK_CHECK(ctx, coll()->all_reduce(self, comm, stream, big, got, BIG_COUNT, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM));
        for (size_t i = 0; i < BIG_COUNT; ++i) {
            double want = 0;
            for (int32_t r = 0; r < n; ++r) want += contribution(r, i);
            if (got[i] != (float)want) ctx->mismatches++;
        }
        if (n > 1) {
            /* A ring larger than the channels' rings: only a group lets it complete. */
            RANK_CHECK(ctx, coll()->group_start(self));
            RANK_CHECK(ctx, coll()->send(self, comm, stream, big, BIG_COUNT, PAGODA_DTYPE_F32, (me + 1) % n));
            RANK_CHECK(ctx, coll()->recv(self, comm, stream, got, BIG_COUNT, PAGODA_DTYPE_F32, (me + n - 1) % n));
            RANK_CHECK(ctx, coll()->group_end(self));
            for (size_t i = 0; i < BIG_COUNT; ++i)
                if (got[i] != contribution((me + n - 1) % n, i)) ctx->mismatches++;
        }
        free(big);
        free(got);
    }
    iface->stream_destroy(self, stream);
    coll()->comm_destroy(self, comm);
    return NULL;
}

static pagoda_comm_options_t options_for(pagoda_comm_scope_t scope, int64_t timeout_ms) {
    pagoda_comm_options_t o = {sizeof o, scope, timeout_ms};
    return o;
}

static void run_ranks_in(int32_t n_ranks, pagoda_comm_scope_t scope) {
    pagoda_comm_unique_id_t id;
    pagoda_comm_options_t options = options_for(scope, 0);
    TEST_ASSERT_OK(coll()->get_unique_id_ex(test_cpu_iface()->self, &options, &id));
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

static void run_ranks(int32_t n_ranks) {
    run_ranks_in(n_ranks, PAGODA_COMM_SCOPE_PROCESS);
    /* Threads may also share a host-scope (shared-memory) or network communicator. */
    run_ranks_in(n_ranks, PAGODA_COMM_SCOPE_HOST);
    run_ranks_in(n_ranks, PAGODA_COMM_SCOPE_NETWORK);
}

static void test_one_rank(void **state) { (void)state; run_ranks(1); }
static void test_two_ranks(void **state) { (void)state; run_ranks(2); }
static void test_three_ranks(void **state) { (void)state; run_ranks(3); }
static void test_four_ranks(void **state) { (void)state; run_ranks(4); }

/* ---- Ranks in separate processes ---------------------------------------------------------- */

/* What a process rank does: the full set of checks, or fail its peers by dying or stalling. */
typedef enum scenario { SCENARIO_CHECKS, SCENARIO_DIE, SCENARIO_STALL } scenario_t;

#define PEER_TIMEOUT_MS 2000
#define VICTIM_GRACE_MS 300 /* the victim lives this long after its last collective */

static void id_to_hex(const pagoda_comm_unique_id_t *id, char *hex) {
    for (size_t i = 0; i < sizeof id->bytes; ++i) sprintf(hex + 2 * i, "%02x", id->bytes[i]);
}

static int id_from_hex(const char *hex, pagoda_comm_unique_id_t *id) {
    if (strlen(hex) != 2 * sizeof id->bytes) return 0;
    for (size_t i = 0; i < sizeof id->bytes; ++i) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 0;
        id->bytes[i] = (unsigned char)v;
    }
    return 1;
}

/* Rank `victim` joins, takes part in one all-reduce and then dies (SIGKILL) or stops answering;
 * every other rank's next all-reduce must fail with BACKEND, naming why, within the timeout. */
static int rank_outlives_victim(int32_t rank, int32_t n_ranks, int32_t victim, scenario_t scenario,
                                pagoda_comm_scope_t scope, const pagoda_comm_unique_id_t *id) {
    const pagoda_backend_iface_t *iface = test_cpu_iface();
    pagoda_comm_options_t options = options_for(scope, PEER_TIMEOUT_MS);
    pagoda_backend_comm_t *comm = NULL;
    if (coll()->comm_create_ex(iface->self, 0, id, n_ranks, rank, &options, &comm) != PAGODA_OK) {
        fprintf(stderr, "rank %d: comm_create_ex: %s\n", rank, pagoda_last_error_message());
        return 2;
    }
    pagoda_backend_stream_t *stream = test_stream_create(iface);
    float x[64] = {1};
    if (coll()->all_reduce(iface->self, comm, stream, x, x, 64, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM) != PAGODA_OK) {
        fprintf(stderr, "rank %d: first all_reduce: %s\n", rank, pagoda_last_error_message());
        return 3;
    }
    if (rank == victim) {
        /* A peer may still be finishing the collective the victim has just left; dying at once
         * would fail that one instead (a slow, sanitized run showed it). The others wait for
         * the victim in the next all_reduce meanwhile. */
        const struct timespec grace = {0, VICTIM_GRACE_MS * 1000000L};
        nanosleep(&grace, NULL);
        if (scenario == SCENARIO_DIE) raise(SIGKILL);
        for (;;) pause(); /* stops answering until the parent kills it */
    }
    const double start = test_seconds_now();
    const pagoda_status_t s =
        coll()->all_reduce(iface->self, comm, stream, x, x, 64, PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM);
    const double waited = test_seconds_now() - start;
    /* Shared memory sees the process gone or the wait given up; the network names the peer
     * whose connection closed or whose answer timed out. */
    char why[64];
    if (scope == PAGODA_COMM_SCOPE_NETWORK) snprintf(why, sizeof why, "rank %d (at ", victim);
    else snprintf(why, sizeof why, "%s", scenario == SCENARIO_DIE ? "has died" : "gave up");
    if (s != PAGODA_ERR_BACKEND || strstr(pagoda_last_error_message(), why) == NULL) {
        fprintf(stderr, "rank %d: the all_reduce after rank %d %s returned %d: %s\n", rank, victim, why, (int)s,
                pagoda_last_error_message());
        return 4;
    }
    /* Death is seen within a few wake-ups of it; a stall at the timeout. Both well inside 10 s. */
    if (waited > (scenario == SCENARIO_DIE ? 1.0 + VICTIM_GRACE_MS / 1000.0 : PEER_TIMEOUT_MS / 1000.0 + 2.0)) {
        fprintf(stderr, "rank %d: failing took %.2f s\n", rank, waited);
        return 5;
    }
    test_stream_destroy(iface, stream);
    coll()->comm_destroy(iface->self, comm);
    return 0;
}

/* The entry of a process rank: --rank R --ranks N --scenario S --victim V --scope C --id HEX. */
static int process_rank_main(int argc, char **argv) {
    int32_t rank = -1, n_ranks = 0, victim = -1;
    scenario_t scenario = SCENARIO_CHECKS;
    pagoda_comm_scope_t scope = PAGODA_COMM_SCOPE_HOST;
    pagoda_comm_unique_id_t id;
    int have_id = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rank") == 0) rank = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ranks") == 0) n_ranks = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--victim") == 0) victim = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--scenario") == 0) scenario = (scenario_t)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--scope") == 0) scope = (pagoda_comm_scope_t)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--id") == 0) have_id = id_from_hex(argv[i + 1], &id);
    }
    if (rank < 0 || n_ranks < 1 || !have_id) return 10;
    if (scenario != SCENARIO_CHECKS) return rank_outlives_victim(rank, n_ranks, victim, scenario, scope, &id);
    rank_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rank = rank;
    ctx.n_ranks = n_ranks;
    ctx.big = 1;
    ctx.id = &id;
    rank_main(&ctx);
    if (ctx.status != PAGODA_OK) fprintf(stderr, "rank %d of %d: %s\n", rank, n_ranks, ctx.message);
    if (ctx.mismatches != 0) fprintf(stderr, "rank %d of %d: %d wrong elements\n", rank, n_ranks, ctx.mismatches);
    return ctx.status != PAGODA_OK ? 11 : ctx.mismatches != 0 ? 12 : 0;
}

/* Starts `n_ranks` processes of this executable on a new id of `scope`, waits up to 30 s and
 * checks their exit codes (the victim's by its signal); none is left running either way. A
 * network id's store is served by this process meanwhile. */
static void run_processes_in(int32_t n_ranks, scenario_t scenario, int32_t victim, pagoda_comm_scope_t scope) {
    pagoda_comm_unique_id_t id;
    pagoda_comm_options_t options = options_for(scope, PEER_TIMEOUT_MS);
    TEST_ASSERT_OK(coll()->get_unique_id_ex(test_cpu_iface()->self, &options, &id));
    char hex[2 * sizeof id.bytes + 1];
    id_to_hex(&id, hex);
    pid_t pids[MAX_RANKS];
    for (int32_t r = 0; r < n_ranks; ++r) {
        char rank_s[16], ranks_s[16], victim_s[16], scenario_s[16], scope_s[16];
        snprintf(rank_s, sizeof rank_s, "%d", r);
        snprintf(ranks_s, sizeof ranks_s, "%d", n_ranks);
        snprintf(victim_s, sizeof victim_s, "%d", victim);
        snprintf(scenario_s, sizeof scenario_s, "%d", (int)scenario);
        snprintf(scope_s, sizeof scope_s, "%d", (int)scope);
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            execl("/proc/self/exe", "test_cpu_collectives", "--rank", rank_s, "--ranks", ranks_s, "--victim",
                  victim_s, "--scenario", scenario_s, "--scope", scope_s, "--id", hex, (char *)NULL);
            _exit(127);
        }
    }
    int status[MAX_RANKS], done[MAX_RANKS] = {0}, left = n_ranks;
    const double deadline = test_seconds_now() + 30.0;
    while (left > 0 && test_seconds_now() < deadline) {
        for (int32_t r = 0; r < n_ranks; ++r) {
            if (done[r]) continue;
            if (waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
                done[r] = 1;
                --left;
                /* A stalled victim is stopped once every other rank has given up on it. */
                if (scenario == SCENARIO_STALL && left == 1 && !done[victim]) kill(pids[victim], SIGKILL);
            }
        }
        struct timespec pause_for = {0, 10 * 1000 * 1000};
        nanosleep(&pause_for, NULL);
    }
    for (int32_t r = 0; r < n_ranks; ++r)
        if (!done[r]) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &status[r], 0);
        }
    assert_int_equal(left, 0); /* nobody hung */
    for (int32_t r = 0; r < n_ranks; ++r) {
        if (r == victim) {
            assert_true(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL);
            continue;
        }
        if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0)
            fail_msg("process rank %d of %d ended with status 0x%x", r, n_ranks, status[r]);
    }
}

static void run_processes(int32_t n_ranks, scenario_t scenario, int32_t victim) {
    run_processes_in(n_ranks, scenario, victim, PAGODA_COMM_SCOPE_HOST);
    run_processes_in(n_ranks, scenario, victim, PAGODA_COMM_SCOPE_NETWORK);
}

static void test_two_processes(void **state) { (void)state; run_processes(2, SCENARIO_CHECKS, -1); }
static void test_four_processes(void **state) { (void)state; run_processes(4, SCENARIO_CHECKS, -1); }
static void test_killed_rank_fails_peers(void **state) { (void)state; run_processes(3, SCENARIO_DIE, 1); }
static void test_stalled_rank_fails_peers(void **state) { (void)state; run_processes(2, SCENARIO_STALL, 0); }

static void test_scopes(void **state) {
    (void)state;
    void *self = test_cpu_iface()->self;
    pagoda_comm_unique_id_t id;
    pagoda_comm_options_t options = options_for(PAGODA_COMM_SCOPE_NETWORK, 500);
    TEST_ASSERT_OK(coll()->get_unique_id_ex(self, &options, &id));
    /* Over the network too, a rank whose peer never joins gives up after the timeout, and says
     * whom it waited for. */
    pagoda_backend_comm_t *lonely = NULL;
    const double start = test_seconds_now();
    assert_int_equal(coll()->comm_create_ex(self, 0, &id, 2, 0, &options, &lonely), PAGODA_ERR_BACKEND);
    assert_true(test_seconds_now() - start < 5.0);
    assert_non_null(strstr(pagoda_last_error_message(), "no answer in 500 ms"));
    assert_null(lonely);
    options.scope = (pagoda_comm_scope_t)7;
    assert_int_equal(coll()->get_unique_id_ex(self, &options, &id), PAGODA_ERR_INVALID_ARGUMENT);
    /* A rank whose peer never joins gives up after the timeout. */
    options = options_for(PAGODA_COMM_SCOPE_HOST, 500);
    TEST_ASSERT_OK(coll()->get_unique_id_ex(self, &options, &id));
    pagoda_backend_comm_t *comm = NULL;
    assert_int_equal(coll()->comm_create_ex(self, 0, &id, 2, 0, &options, &comm), PAGODA_ERR_BACKEND);
    assert_non_null(strstr(pagoda_last_error_message(), "to join"));
    options.timeout_ms = -1;
    assert_int_equal(coll()->comm_create_ex(self, 0, &id, 1, 0, &options, &comm), PAGODA_ERR_INVALID_ARGUMENT);
}

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

static void abort_wakes_waiting_rank_in(pagoda_comm_scope_t scope) {
    void *self = test_cpu_iface()->self;
    pagoda_comm_unique_id_t id;
    pagoda_comm_options_t options = options_for(scope, 0);
    TEST_ASSERT_OK(coll()->get_unique_id_ex(self, &options, &id));
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

static void test_abort_wakes_waiting_rank(void **state) {
    (void)state;
    abort_wakes_waiting_rank_in(PAGODA_COMM_SCOPE_PROCESS);
    /* Over the network the abort closes rank 1's connections, which ends rank 0's wait. */
    abort_wakes_waiting_rank_in(PAGODA_COMM_SCOPE_NETWORK);
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

int main(int argc, char **argv) {
    if (argc > 1) return process_rank_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_abort_wakes_waiting_rank),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_four_processes),
        cmocka_unit_test(test_killed_rank_fails_peers),
        cmocka_unit_test(test_stalled_rank_fails_peers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
