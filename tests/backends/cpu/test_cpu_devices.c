/* The CPU backend as a mesh of logical devices (config "devices=N"): per-device threads and
 * memory budgets, device indices checked everywhere, kernels and collectives on any device, the
 * injected collective fault and the abort that frees its peers, and two host threads driving
 * two devices at once. Each test loads the plugin with its own config and unloads it after. */
#define _GNU_SOURCE /* pthread_timedjoin_np: every wait here is bounded */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define CPU_PLUGIN PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so"
#define N_DEVICES 4
#define COUNT 1001 /* elements per collective: not a multiple of 4 */
#define WAIT_SECONDS 20 /* far above what any wait here needs; a hang fails instead */

static const pagoda_backend_iface_t *load_cpu(const char *config) {
    pagoda_backend_t *b = NULL;
    pagoda_status_t s = pagoda_backend_load(CPU_PLUGIN, config, &b);
    if (s != PAGODA_OK)
        fail_msg("loading the CPU backend with '%s': %s: %s", config, pagoda_status_string(s),
                 pagoda_last_error_message());
    return pagoda_backend_interface(b);
}

static int unload(void **state) {
    (void)state;
    pagoda_backends_unload_all();
    return 0;
}

static pagoda_device_info_t info_of(const pagoda_backend_iface_t *t, int32_t device) {
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(t->device_info(t->self, device, &info));
    return info;
}

/* Joins `thread` within WAIT_SECONDS; fails the test (naming `what`) if it is still running. */
static void join_bounded(pthread_t thread, const char *what) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_SECONDS;
    int rc = pthread_timedjoin_np(thread, NULL, &deadline);
    if (rc != 0) fail_msg("%s did not finish within %d s (%s)", what, WAIT_SECONDS, strerror(rc));
}

static void test_bad_configs(void **state) {
    (void)state;
    struct { const char *config, *needle; } bad[] = {
        {"devices=0", "devices='0' is not a device count in 1..64"},
        {"devices=abc", "devices='abc'"},
        {"devices=65", "devices='65'"},
        {"devices=-2", "devices='-2'"},
        {"threads=0", "threads='0'"},
        {"devices=3,device_threads=2/1", "device_threads='2/1' lists 2 devices but devices=3"},
        {"device_threads=2//1", "device_threads='2//1'"},
        {"device_threads=2/0", "device_threads='2/0'"},
        {"memory=12X", "memory='12X' is not a positive byte count"},
        {"memory=0", "memory='0'"},
        {"memory=1GB", "memory='1GB'"},
        {"memory=99999999999T", "memory='99999999999T'"},
        {"devices=4,fail_collective=4:1", "fail_collective='4:1' names device 4 of 4"},
        {"fail_collective=0:0", "fail_collective='0:0'"},
        {"fail_collective=1", "fail_collective='1'"},
        {"weights=mmap", "weights='mmap' is not one of copy, mapped"},
        {"network_interface=pagoda-nonesuch", "network_interface='pagoda-nonesuch' names no network interface"},
        {"network_interface=", "network_interface=''"},
        {"device=2", "unknown config key 'device'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        pagoda_backend_t *b = NULL;
        pagoda_clear_error();
        test_expect_failure(pagoda_backend_load(CPU_PLUGIN, bad[i].config, &b),
                            PAGODA_ERR_INVALID_ARGUMENT, bad[i].needle);
        assert_null(b);
    }
    /* An interface that exists is taken (loopback is on every machine). */
    (void)load_cpu("network_interface=lo");
}

/* threads=T is split over the devices (the first T%N get one more); device_threads sets each. */
static void test_threads_per_device(void **state) {
    (void)state;
    struct { const char *config; int32_t n; int32_t units[N_DEVICES]; } cases[] = {
        {"devices=4,threads=6", 4, {2, 2, 1, 1}},
        {"devices=3,threads=2", 3, {1, 1, 1}}, /* each at least 1 */
        {"device_threads=2/1/1", 3, {2, 1, 1}},
        {"devices=3,device_threads=2/1/1,threads=9", 3, {2, 1, 1}},
        {"threads=3", 1, {3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const pagoda_backend_iface_t *t = load_cpu(cases[c].config);
        int32_t n = 0;
        TEST_ASSERT_OK(t->device_count(t->self, &n));
        assert_int_equal(n, cases[c].n);
        for (int32_t d = 0; d < n; ++d) {
            pagoda_device_info_t info = info_of(t, d);
            if (info.compute_units != cases[c].units[d])
                fail_msg("%s: cpu:%d has %d threads, expected %d", cases[c].config, d,
                         info.compute_units, cases[c].units[d]);
            assert_int_equal(info.kind, PAGODA_DEVICE_CPU);
        }
        pagoda_backends_unload_all();
    }
}

/* Weights are copied into the backend's buffers unless weights=mapped asks to read the file's
 * mapping in place; the device says which. */
static void test_weights_placement(void **state) {
    (void)state;
    struct { const char *config; uint32_t flags; } cases[] = {
        {NULL, PAGODA_DEVICE_HOST_ACCESSIBLE},
        {"weights=copy", PAGODA_DEVICE_HOST_ACCESSIBLE},
        {"devices=2,weights=mapped", PAGODA_DEVICE_HOST_ACCESSIBLE | PAGODA_DEVICE_USES_HOST_WEIGHTS},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const pagoda_backend_iface_t *t = load_cpu(cases[c].config);
        int32_t n = 0;
        TEST_ASSERT_OK(t->device_count(t->self, &n));
        for (int32_t d = 0; d < n; ++d) assert_int_equal(info_of(t, d).flags, cases[c].flags);
        pagoda_backends_unload_all();
    }
}

static void test_memory_budgets(void **state) {
    (void)state;
    /* Every spelling of a size: plain bytes and K/M/G/T suffixes in either case. */
    struct { const char *config; uint64_t bytes; } sizes[] = {
        {"memory=1000000", 1000000ull},  {"memory=1536K", 1536ull << 10},
        {"memory=3m", 3ull << 20},       {"memory=2G", 2ull << 30},
        {"memory=1T", 1ull << 40},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        const pagoda_backend_iface_t *t = load_cpu(sizes[i].config);
        pagoda_device_info_t info = info_of(t, 0);
        assert_int_equal(info.total_memory, sizes[i].bytes);
        assert_true(info.free_memory <= info.total_memory);
        pagoda_backends_unload_all();
    }
    /* By default the host's memory is shared out evenly. */
    const pagoda_backend_iface_t *t = load_cpu("devices=4");
    assert_true(info_of(t, 0).total_memory > 0);
    assert_int_equal(info_of(t, 0).total_memory, info_of(t, 3).total_memory);
    pagoda_backends_unload_all();

    t = load_cpu("devices=4,memory=1M");
    void *a = NULL, *b = NULL, *c = NULL, *host = NULL;
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 1, 600000, &a));
    assert_int_equal(info_of(t, 1).total_memory, 1 << 20);
    assert_true(info_of(t, 1).free_memory <= (1 << 20) - 600000);
    /* The second one would pass cpu:1's budget: the message says where, how much and what is left. */
    pagoda_clear_error();
    test_expect_failure(t->buffer_alloc(t->self, 1, 600000, &b), PAGODA_ERR_OUT_OF_MEMORY,
                        "allocating 600000 bytes on cpu:1: only 448576 of its 1048576 bytes");
    assert_null(b);
    /* Other devices have budgets of their own, and host buffers count against none. */
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 2, 600000, &c));
    TEST_ASSERT_OK(t->host_buffer_alloc(t->self, 4 << 20, &host));
    /* Freeing gives the bytes back. */
    t->buffer_free(t->self, 1, a);
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 1, 600000, &b));
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 1, 1048576 - 600000, &a)); /* exactly the rest */
    void *none = NULL;
    test_expect_failure(t->buffer_alloc(t->self, 1, 1, &none), PAGODA_ERR_OUT_OF_MEMORY,
                        "only 0 of its");
    t->buffer_free(t->self, 1, a);
    t->buffer_free(t->self, 1, b);
    t->buffer_free(t->self, 2, c);
    t->host_buffer_free(t->self, host);
    assert_true(info_of(t, 1).free_memory <= (1 << 20));
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 1, 1 << 20, &a)); /* all of it again */
    t->buffer_free(t->self, 1, a);
}

static void test_bad_device_indices(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = load_cpu("devices=4");
    const char *needle = "device 4 does not exist (cpu:0-3)";
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    test_expect_failure(t->device_info(t->self, 4, &info), PAGODA_ERR_NOT_FOUND, needle);
    void *p = NULL;
    test_expect_failure(t->buffer_alloc(t->self, 4, 64, &p), PAGODA_ERR_NOT_FOUND, needle);
    test_expect_failure(t->buffer_alloc(t->self, -1, 64, &p), PAGODA_ERR_NOT_FOUND,
                        "device -1 does not exist (cpu:0-3)");
    pagoda_backend_stream_t *stream = NULL;
    test_expect_failure(t->stream_create(t->self, 4, &stream), PAGODA_ERR_NOT_FOUND, needle);
    pagoda_backend_event_t *event = NULL;
    test_expect_failure(t->event_create(t->self, 4, 0, &event), PAGODA_ERR_NOT_FOUND, needle);
    pagoda_op_add_t add = {sizeof add, 1, NULL, NULL, NULL, PAGODA_DTYPE_F32};
    test_expect_failure(t->kernels->supports(t->self, 4, PAGODA_OP_ADD, &add), PAGODA_ERR_NOT_FOUND,
                        needle);
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(t->collectives->get_unique_id(t->self, &id));
    pagoda_backend_comm_t *comm = NULL;
    test_expect_failure(t->collectives->comm_create(t->self, 4, &id, 1, 0, &comm),
                        PAGODA_ERR_NOT_FOUND, needle);
    assert_null(p);
    assert_null(stream);
    assert_null(event);
    assert_null(comm);
    /* One device names itself alone. */
    pagoda_backends_unload_all();
    t = load_cpu("devices=1");
    test_expect_failure(t->buffer_alloc(t->self, 1, 64, &p), PAGODA_ERR_NOT_FOUND,
                        "device 1 does not exist (cpu:0)");
}

/* out = a + b on `device`, from a buffer of that device; returns the number of wrong elements. */
static int add_on_device(const pagoda_backend_iface_t *t, int32_t device, int64_t n, float shift) {
    pagoda_backend_stream_t *stream = NULL;
    TEST_ASSERT_OK(t->stream_create(t->self, device, &stream));
    float *buf = NULL;
    TEST_ASSERT_OK(t->buffer_alloc(t->self, device, (size_t)n * 3 * sizeof(float), (void **)&buf));
    float *a = buf, *b = buf + n, *out = buf + 2 * n;
    for (int64_t i = 0; i < n; ++i) {
        a[i] = (float)(i % 1000) + shift;
        b[i] = (float)(i % 7);
    }
    TEST_ASSERT_OK(t->memset(t->self, stream, out, 0, (size_t)n * sizeof(float)));
    pagoda_op_add_t add = {sizeof add, n, a, b, out, PAGODA_DTYPE_F32};
    TEST_ASSERT_OK(t->kernels->launch(t->self, stream, PAGODA_OP_ADD, &add));
    TEST_ASSERT_OK(t->stream_synchronize(t->self, stream));
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i)
        if (out[i] != (float)(i % 1000) + shift + (float)(i % 7)) ++wrong;
    t->buffer_free(t->self, device, buf);
    t->stream_destroy(t->self, stream);
    return wrong;
}

static void test_kernel_on_last_device(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = load_cpu("devices=4,threads=5");
    /* Large enough (four 64K-element chunks) that the 2-thread device 0 and the 1-thread
     * device 3 both split it as their pools allow. */
    assert_int_equal(add_on_device(t, 3, 1 << 18, 0.5f), 0);
    assert_int_equal(add_on_device(t, 0, 1 << 18, 0.25f), 0);
}

/* Two host threads, each driving its own device with large launches at the same time. */
typedef struct driver {
    const pagoda_backend_iface_t *t;
    int32_t device;
    int wrong;
} driver_t;

static void *drive_device(void *arg) {
    driver_t *d = (driver_t *)arg;
    for (int i = 0; i < 20; ++i) d->wrong += add_on_device(d->t, d->device, 1 << 18, (float)i);
    return NULL;
}

static void test_concurrent_devices(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = load_cpu("devices=3,device_threads=2/2/1");
    driver_t drivers[2] = {{t, 1, 0}, {t, 2, 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i)
        assert_int_equal(pthread_create(&threads[i], NULL, drive_device, &drivers[i]), 0);
    for (int i = 0; i < 2; ++i) join_bounded(threads[i], "a thread driving a device");
    assert_int_equal(drivers[0].wrong, 0);
    assert_int_equal(drivers[1].wrong, 0);
}

/* Collectives over four devices: rank r runs on its own host thread and on cpu:r. */
typedef struct rank_ctx {
    const pagoda_backend_iface_t *t;
    const pagoda_comm_unique_id_t *id;
    int32_t rank;
    int rounds;                 /* all_reduce calls; fault test: the last one may block */
    pagoda_backend_comm_t *comm; /* left for the main thread to abort and destroy */
    pagoda_status_t status;
    char message[512];
    int wrong;
} rank_ctx_t;

static float contribution(int32_t rank, size_t i) { return (float)(i % 13) + 100.0f * (float)rank; }

static int check_call(rank_ctx_t *ctx, pagoda_status_t s) {
    if (s != PAGODA_OK && ctx->status == PAGODA_OK) {
        ctx->status = s;
        snprintf(ctx->message, sizeof ctx->message, "%s", pagoda_last_error_message());
    }
    return s == PAGODA_OK;
}

static void *rank_main(void *arg) {
    rank_ctx_t *ctx = (rank_ctx_t *)arg;
    const pagoda_backend_iface_t *t = ctx->t;
    const pagoda_backend_collectives_t *c = t->collectives;
    const int32_t me = ctx->rank;
    if (!check_call(ctx, c->comm_create(t->self, me, ctx->id, N_DEVICES, me, &ctx->comm)))
        return NULL;
    pagoda_backend_stream_t *stream = NULL;
    if (!check_call(ctx, t->stream_create(t->self, me, &stream))) return NULL;
    float *send = NULL, *recv = NULL;
    check_call(ctx, t->buffer_alloc(t->self, me, sizeof(float) * COUNT, (void **)&send));
    check_call(ctx, t->buffer_alloc(t->self, me, sizeof(float) * COUNT * N_DEVICES, (void **)&recv));
    if (send == NULL || recv == NULL) return NULL;
    for (size_t i = 0; i < COUNT; ++i) send[i] = contribution(me, i);

    for (int round = 0; round < ctx->rounds && ctx->status == PAGODA_OK; ++round) {
        if (!check_call(ctx, c->all_reduce(t->self, ctx->comm, stream, send, recv, COUNT,
                                           PAGODA_DTYPE_F32, PAGODA_REDUCE_SUM)))
            break;
        for (size_t i = 0; i < COUNT; ++i) {
            float want = 0;
            for (int32_t r = 0; r < N_DEVICES; ++r) want += contribution(r, i);
            if (recv[i] != want) ++ctx->wrong;
        }
    }
    if (ctx->rounds == 1) { /* the full set: all_gather and a ring of send/recv too */
        if (check_call(ctx, c->all_gather(t->self, ctx->comm, stream, send, recv, COUNT,
                                          PAGODA_DTYPE_F32)))
            for (int32_t r = 0; r < N_DEVICES; ++r)
                for (size_t i = 0; i < COUNT; ++i)
                    if (recv[(size_t)r * COUNT + i] != contribution(r, i)) ++ctx->wrong;
        const int32_t right = (me + 1) % N_DEVICES, left = (me + N_DEVICES - 1) % N_DEVICES;
        if (check_call(ctx, c->send(t->self, ctx->comm, stream, send, COUNT, PAGODA_DTYPE_F32, right)) &&
            check_call(ctx, c->recv(t->self, ctx->comm, stream, recv, COUNT, PAGODA_DTYPE_F32, left)))
            for (size_t i = 0; i < COUNT; ++i)
                if (recv[i] != contribution(left, i)) ++ctx->wrong;
    }
    t->buffer_free(t->self, me, send);
    t->buffer_free(t->self, me, recv);
    t->stream_destroy(t->self, stream);
    return NULL;
}

static void start_ranks(const pagoda_backend_iface_t *t, const pagoda_comm_unique_id_t *id,
                        int rounds, rank_ctx_t *ctx, pthread_t *threads) {
    memset(ctx, 0, sizeof(rank_ctx_t) * N_DEVICES);
    for (int32_t r = 0; r < N_DEVICES; ++r) {
        ctx[r].t = t;
        ctx[r].id = id;
        ctx[r].rank = r;
        ctx[r].rounds = rounds;
        assert_int_equal(pthread_create(&threads[r], NULL, rank_main, &ctx[r]), 0);
    }
}

static void finish_ranks(const pagoda_backend_iface_t *t, rank_ctx_t *ctx, pthread_t *threads) {
    for (int32_t r = 0; r < N_DEVICES; ++r) join_bounded(threads[r], "a rank");
    for (int32_t r = 0; r < N_DEVICES; ++r) {
        if (ctx[r].status != PAGODA_OK) fail_msg("rank %d: %s", r, ctx[r].message);
        if (ctx[r].wrong != 0) fail_msg("rank %d: %d wrong elements", r, ctx[r].wrong);
        t->collectives->comm_destroy(t->self, ctx[r].comm);
    }
}

static void test_collectives_over_devices(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = load_cpu("devices=4,threads=4");
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(t->collectives->get_unique_id(t->self, &id));
    rank_ctx_t ctx[N_DEVICES];
    pthread_t threads[N_DEVICES];
    start_ranks(t, &id, 1, ctx, threads);
    finish_ranks(t, ctx, threads);

    /* A collective runs on its communicator's device: a stream of another device is refused. */
    pagoda_backend_comm_t *comm = NULL;
    pagoda_backend_stream_t *stream = NULL;
    TEST_ASSERT_OK(t->collectives->get_unique_id(t->self, &id));
    TEST_ASSERT_OK(t->collectives->comm_create(t->self, 2, &id, 1, 0, &comm));
    TEST_ASSERT_OK(t->stream_create(t->self, 1, &stream));
    float x[4] = {0};
    test_expect_failure(t->collectives->all_reduce(t->self, comm, stream, x, x, 4, PAGODA_DTYPE_F32,
                                                   PAGODA_REDUCE_SUM),
                        PAGODA_ERR_INVALID_ARGUMENT,
                        "all_reduce: the stream is on cpu:1 but the communicator's rank 0 is on cpu:2");
    t->stream_destroy(t->self, stream);
    t->collectives->comm_destroy(t->self, comm);
}

/* fail_collective=2:2: cpu:2's second collective fails alone; its peers wait in that all_reduce
 * until the host aborts, which wakes them with an error. The fault fires once. */
static void test_injected_fault_and_abort(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = load_cpu("devices=4,threads=4,fail_collective=2:2");
    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(t->collectives->get_unique_id(t->self, &id));
    rank_ctx_t ctx[N_DEVICES];
    pthread_t threads[N_DEVICES];
    start_ranks(t, &id, 2, ctx, threads);

    join_bounded(threads[2], "the rank with the injected fault");
    assert_int_equal(ctx[2].status, PAGODA_ERR_BACKEND);
    if (strstr(ctx[2].message, "fault injected by config fail_collective=2:2") == NULL)
        fail_msg("unexpected message: %s", ctx[2].message);
    /* The others are still waiting for rank 2 (the fault does not abort the group). */
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    pagoda_status_t async = PAGODA_ERR_INTERNAL;
    for (int32_t r = 0; r < N_DEVICES; ++r) {
        if (r == 2) continue;
        assert_int_equal(pthread_tryjoin_np(threads[r], NULL), EBUSY);
        TEST_ASSERT_OK(t->collectives->comm_get_async_error(t->self, ctx[r].comm, &async));
        assert_int_equal(async, PAGODA_OK);
    }
    /* What the engine will do: abort the failed rank's communicator, which wakes its peers. */
    TEST_ASSERT_OK(t->collectives->comm_abort(t->self, ctx[2].comm));
    for (int32_t r = 0; r < N_DEVICES; ++r) {
        if (r == 2) continue;
        join_bounded(threads[r], "a rank waiting on the failed one");
        assert_int_equal(ctx[r].status, PAGODA_ERR_BACKEND);
        if (strstr(ctx[r].message, "aborted") == NULL)
            fail_msg("rank %d: unexpected message: %s", r, ctx[r].message);
        assert_int_equal(ctx[r].wrong, 0); /* the first all_reduce was right */
        TEST_ASSERT_OK(t->collectives->comm_get_async_error(t->self, ctx[r].comm, &async));
        assert_int_equal(async, PAGODA_ERR_BACKEND);
    }
    for (int32_t r = 0; r < N_DEVICES; ++r) t->collectives->comm_destroy(t->self, ctx[r].comm);

    /* Once only: a new communicator's collectives all succeed, cpu:2's included. */
    TEST_ASSERT_OK(t->collectives->get_unique_id(t->self, &id));
    start_ranks(t, &id, 2, ctx, threads);
    finish_ranks(t, ctx, threads);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bad_configs, unload),
        cmocka_unit_test_teardown(test_threads_per_device, unload),
        cmocka_unit_test_teardown(test_weights_placement, unload),
        cmocka_unit_test_teardown(test_memory_budgets, unload),
        cmocka_unit_test_teardown(test_bad_device_indices, unload),
        cmocka_unit_test_teardown(test_kernel_on_last_device, unload),
        cmocka_unit_test_teardown(test_concurrent_devices, unload),
        cmocka_unit_test_teardown(test_collectives_over_devices, unload),
        cmocka_unit_test_teardown(test_injected_fault_and_abort, unload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
