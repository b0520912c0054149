/* The CUDA backend through the plugin ABI: device description, memory, copies of every kind,
 * streams and events, the cuBLAS matmul against the CPU backend and a double-precision
 * reference, unsupported ops, and a one-rank NCCL communicator. On a machine without a CUDA
 * device every test is skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define CUDA_PLUGIN PAGODA_TEST_CUDA_BACKEND_DIR "/libpagoda-backend-cuda.so"

static int g_no_device = 0;

/* The CUDA backend's table, loaded once; skips the calling test when there is no device. */
static const pagoda_backend_iface_t *cuda_iface(void) {
    static pagoda_backend_t *backend = NULL;
    if (backend == NULL && !g_no_device) {
        pagoda_status_t s = pagoda_backend_load(CUDA_PLUGIN, NULL, &backend);
        if (s != PAGODA_OK) {
            const char *message = pagoda_last_error_message();
            if (s == PAGODA_ERR_BACKEND && strstr(message, "no CUDA device") != NULL) {
                fprintf(stderr, "skipping: %s\n", message);
                g_no_device = 1;
            } else {
                fail_msg("loading %s failed: %s: %s", CUDA_PLUGIN, pagoda_status_string(s),
                         message);
            }
        }
    }
    if (g_no_device) skip();
    return pagoda_backend_interface(backend);
}

static void *device_alloc(const pagoda_backend_iface_t *cuda, size_t bytes) {
    void *p = NULL;
    TEST_ASSERT_OK(cuda->buffer_alloc(cuda->self, 0, bytes, &p));
    assert_non_null(p);
    return p;
}

static void test_device_info(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    assert_string_equal(cuda->name, "cuda");
    int32_t count = 0;
    TEST_ASSERT_OK(cuda->device_count(cuda->self, &count));
    assert_true(count >= 1);
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(cuda->device_info(cuda->self, 0, &info));
    assert_int_equal(info.kind, PAGODA_DEVICE_GPU);
    assert_int_equal(info.flags, 0);
    assert_true(info.compute_units > 0);
    assert_true(info.total_memory > 0 && info.free_memory <= info.total_memory);
    assert_true(strncmp(info.arch, "sm_", 3) == 0);
    assert_true(strlen(info.name) > 0);
    /* A device that does not exist is named in the error. */
    assert_int_equal(cuda->device_info(cuda->self, count, &info), PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "does not exist"));
}

/* Host → device → device → host across two streams joined by an event, a host-to-host copy
 * ordered after them, and a memset, all compared with the source. */
static void test_copies_streams_events(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    const size_t n = (size_t)1 << 20, bytes = n * sizeof(float);
    test_rng_t rng;
    test_rng_seed(&rng, 11);

    float *pinned_src = NULL, *pinned_dst = NULL;
    TEST_ASSERT_OK(cuda->host_buffer_alloc(cuda->self, bytes, (void **)&pinned_src));
    TEST_ASSERT_OK(cuda->host_buffer_alloc(cuda->self, bytes, (void **)&pinned_dst));
    float *pageable = test_xmalloc(bytes);
    test_fill_uniform(&rng, pinned_src, n, -1.0f, 1.0f);
    void *a = device_alloc(cuda, bytes), *b = device_alloc(cuda, bytes);

    pagoda_backend_stream_t *s1 = test_stream_create(cuda), *s2 = test_stream_create(cuda);
    pagoda_backend_event_t *done = NULL;
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, 0, &done));

    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, a, pinned_src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, b, a, bytes, PAGODA_COPY_DEVICE_TO_DEVICE));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, done, s1));
    TEST_ASSERT_OK(cuda->stream_wait_event(cuda->self, s2, done));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s2, pinned_dst, b, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s2, pageable, pinned_dst, bytes, PAGODA_COPY_HOST_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, s2));
    TEST_ASSERT_OK(cuda->event_synchronize(cuda->self, done));
    assert_memory_equal(pinned_dst, pinned_src, bytes);
    assert_memory_equal(pageable, pinned_src, bytes);

    /* memset the middle half of `a`, read all of it back into pageable memory. */
    TEST_ASSERT_OK(cuda->memset(cuda->self, s1, (char *)a + bytes / 4, 0x5A, bytes / 2));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, pageable, a, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, s1));
    const unsigned char *got = (const unsigned char *)pageable;
    assert_memory_equal(got, pinned_src, bytes / 4);
    for (size_t i = bytes / 4; i < 3 * bytes / 4; ++i) assert_int_equal(got[i], 0x5A);
    assert_memory_equal(got + 3 * bytes / 4, (const char *)pinned_src + 3 * bytes / 4, bytes / 4);

    /* Bad arguments fail with a status, never a crash. */
    assert_int_equal(cuda->copy(cuda->self, s1, a, NULL, 16, PAGODA_COPY_HOST_TO_DEVICE),
                     PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(cuda->copy(cuda->self, s1, a, b, 16, (pagoda_copy_kind_t)42),
                     PAGODA_ERR_INVALID_ARGUMENT);

    /* Queries never block; after a synchronisation both report completion. */
    uint32_t complete = 0;
    TEST_ASSERT_OK(cuda->stream_query(cuda->self, s2, &complete));
    assert_int_equal(complete, 1);
    complete = 0;
    TEST_ASSERT_OK(cuda->event_query(cuda->self, done, &complete));
    assert_int_equal(complete, 1);

    /* Timing events measure a copy; an event without timing cannot. */
    pagoda_backend_event_t *t0 = NULL, *t1 = NULL;
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, PAGODA_EVENT_TIMING, &t0));
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, PAGODA_EVENT_TIMING, &t1));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, t0, s1));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, b, a, bytes, PAGODA_COPY_DEVICE_TO_DEVICE));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, t1, s1));
    TEST_ASSERT_OK(cuda->event_synchronize(cuda->self, t1));
    float ms = -1.0f;
    TEST_ASSERT_OK(cuda->event_elapsed(cuda->self, t0, t1, &ms));
    assert_true(ms >= 0.0f);
    assert_int_not_equal(cuda->event_elapsed(cuda->self, t0, done, &ms), PAGODA_OK);
    cuda->event_destroy(cuda->self, t0);
    cuda->event_destroy(cuda->self, t1);
    pagoda_backend_event_t *bad = NULL;
    assert_int_equal(cuda->event_create(cuda->self, 0, 0x80, &bad), PAGODA_ERR_INVALID_ARGUMENT);
    assert_null(bad);

    cuda->event_destroy(cuda->self, done);
    test_stream_destroy(cuda, s1);
    test_stream_destroy(cuda, s2);
    cuda->buffer_free(cuda->self, 0, a);
    cuda->buffer_free(cuda->self, 0, b);
    cuda->host_buffer_free(cuda->self, pinned_src);
    cuda->host_buffer_free(cuda->self, pinned_dst);
    free(pageable);
}

typedef struct matmul_case {
    int64_t m, n, k;
    int64_t ldx, ldw, ldy; /* 0 = packed */
    int bias, accumulate;
} matmul_case_t;

static void run_matmul_case(const pagoda_backend_iface_t *cuda, const matmul_case_t *c,
                            test_rng_t *rng) {
    const int64_t ldx = c->ldx ? c->ldx : c->k, ldw = c->ldw ? c->ldw : c->k,
                  ldy = c->ldy ? c->ldy : c->n;
    const size_t nx = (size_t)(c->m * ldx), nw = (size_t)(c->n * ldw), ny = (size_t)(c->m * ldy);
    float *x = test_xmalloc(nx * sizeof *x), *w = test_xmalloc(nw * sizeof *w);
    float *bias = test_xmalloc((size_t)c->n * sizeof *bias);
    float *y0 = test_xmalloc(ny * sizeof *y0), *y_cpu = test_xmalloc(ny * sizeof *y_cpu);
    float *y_gpu = test_xmalloc(ny * sizeof *y_gpu);
    double *ref = test_xmalloc(ny * sizeof *ref);
    test_fill_uniform(rng, x, nx, -1.0f, 1.0f);
    test_fill_uniform(rng, w, nw, -1.0f, 1.0f);
    test_fill_uniform(rng, bias, (size_t)c->n, -1.0f, 1.0f);
    test_fill_uniform(rng, y0, ny, -1.0f, 1.0f);

    /* Padding between rows (ldy > n) keeps its values. */
    for (size_t i = 0; i < ny; ++i) ref[i] = y0[i];
    for (int64_t i = 0; i < c->m; ++i)
        for (int64_t j = 0; j < c->n; ++j) {
            double acc = c->accumulate ? (double)y0[i * ldy + j] : 0.0;
            if (c->bias) acc += bias[j];
            for (int64_t p = 0; p < c->k; ++p) acc += (double)x[i * ldx + p] * w[j * ldw + p];
            ref[i * ldy + j] = acc;
        }

    pagoda_op_matmul_t op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.flags = c->accumulate ? PAGODA_MATMUL_ACCUMULATE : 0;
    op.x_dtype = op.w_dtype = op.y_dtype = PAGODA_DTYPE_F32;
    op.m = c->m;
    op.n = c->n;
    op.k = c->k;
    op.ldx = c->ldx;
    op.ldw = c->ldw;
    op.ldy = c->ldy;

    /* The CPU backend works on host memory directly. Without a CPU kernel for this shape (an
     * empty sum, say) the double reference stands in for it. */
    memcpy(y_cpu, y0, ny * sizeof *y0);
    op.x = x;
    op.w = w;
    op.bias = c->bias ? bias : NULL;
    op.y = y_cpu;
    if (test_cpu_supports(PAGODA_OP_MATMUL, &op) == PAGODA_OK) {
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &op));
    } else {
        for (size_t i = 0; i < ny; ++i) y_cpu[i] = (float)ref[i];
    }

    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    void *dx = device_alloc(cuda, nx * sizeof *x), *dw = device_alloc(cuda, nw * sizeof *w);
    void *db = device_alloc(cuda, (size_t)c->n * sizeof *bias), *dy = device_alloc(cuda, ny * sizeof *y0);
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, dx, x, nx * sizeof *x, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, dw, w, nw * sizeof *w, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, db, bias, (size_t)c->n * sizeof *bias,
                              PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, dy, y0, ny * sizeof *y0, PAGODA_COPY_HOST_TO_DEVICE));
    op.x = dx;
    op.w = dw;
    op.bias = c->bias ? db : NULL;
    op.y = dy;
    TEST_ASSERT_OK(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &op));
    TEST_ASSERT_OK(cuda->kernels->launch(cuda->self, stream, PAGODA_OP_MATMUL, &op));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, y_gpu, dy, ny * sizeof *y0, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, stream));

    for (int64_t i = 0; i < c->m; ++i)
        for (int64_t j = c->n; j < ldy; ++j) assert_true(y_gpu[i * ldy + j] == y0[i * ldy + j]);
    double *cpu_as_ref = test_xmalloc(ny * sizeof *cpu_as_ref);
    for (size_t i = 0; i < ny; ++i) cpu_as_ref[i] = y_cpu[i];
    double err_ref = test_rel_error(y_gpu, ref, ny), err_cpu = test_rel_error(y_gpu, cpu_as_ref, ny);
    /* f32 products with f32 accumulation stay near 1e-7 here; TF32 would be near 1e-3. */
    if (err_ref > 1e-5 || err_cpu > 1e-4)
        fail_msg("matmul m=%lld n=%lld k=%lld: relative error %.3g vs double, %.3g vs CPU",
                 (long long)c->m, (long long)c->n, (long long)c->k, err_ref, err_cpu);

    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, dx);
    cuda->buffer_free(cuda->self, 0, dw);
    cuda->buffer_free(cuda->self, 0, db);
    cuda->buffer_free(cuda->self, 0, dy);
    free(x);
    free(w);
    free(bias);
    free(y0);
    free(y_cpu);
    free(y_gpu);
    free(ref);
    free(cpu_as_ref);
}

static void test_matmul_matches_cpu(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    static const matmul_case_t cases[] = {
        {1, 256, 512, 0, 0, 0, 0, 0},       /* decode GEMV */
        {4, 300, 257, 0, 0, 0, 1, 0},       /* odd sizes, bias */
        {7, 33, 65, 80, 70, 40, 1, 1},      /* strides, bias, accumulate */
        {128, 384, 1024, 0, 0, 0, 0, 1},    /* prefill, accumulate */
        {3, 5, 0, 0, 0, 0, 1, 0},           /* empty sum: y = bias */
    };
    test_rng_t rng;
    test_rng_seed(&rng, 42);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_matmul_case(cuda, &cases[i], &rng);
}

static void test_unsupported_ops(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    pagoda_op_matmul_t mm;
    memset(&mm, 0, sizeof mm);
    mm.struct_size = sizeof mm;
    mm.x_dtype = mm.y_dtype = PAGODA_DTYPE_F32;
    mm.w_dtype = PAGODA_DTYPE_BF16;
    mm.m = 1;
    mm.n = mm.k = 64;
    test_expect_failure(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm),
                        PAGODA_ERR_UNSUPPORTED, "bf16");

    pagoda_op_paged_attention_t pa;
    memset(&pa, 0, sizeof pa);
    pa.struct_size = sizeof pa;
    test_expect_failure(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_PAGED_ATTENTION, &pa),
                        PAGODA_ERR_UNSUPPORTED, "not yet implemented");
}

/* One rank: an all-reduce leaves the data as it was, an all-gather copies it; an aborted
 * communicator refuses further work. */
static void test_nccl_one_rank(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    const pagoda_backend_collectives_t *coll = cuda->collectives;
    assert_non_null(coll);
    const size_t n = 4096, bytes = n * sizeof(float);
    float *src = test_xmalloc(bytes), *got = test_xmalloc(bytes);
    test_rng_t rng;
    test_rng_seed(&rng, 5);
    test_fill_uniform(&rng, src, n, -1.0f, 1.0f);

    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll->get_unique_id(cuda->self, &id));
    pagoda_backend_comm_t *comm = NULL;
    TEST_ASSERT_OK(coll->comm_create(cuda->self, 0, &id, 1, 0, &comm));
    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    void *a = device_alloc(cuda, bytes), *b = device_alloc(cuda, bytes);
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, a, src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_F32,
                                    PAGODA_REDUCE_SUM));
    TEST_ASSERT_OK(coll->all_gather(cuda->self, comm, stream, a, b, n, PAGODA_DTYPE_F32));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, got, b, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, stream));
    assert_memory_equal(got, src, bytes);

    assert_int_equal(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_INVALID,
                                      PAGODA_REDUCE_SUM),
                     PAGODA_ERR_UNSUPPORTED);
    pagoda_status_t async = PAGODA_ERR_INTERNAL;
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_OK);
    TEST_ASSERT_OK(coll->comm_abort(cuda->self, comm));
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_ERR_BACKEND);
    assert_int_equal(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_F32,
                                      PAGODA_REDUCE_SUM),
                     PAGODA_ERR_BACKEND);
    coll->comm_destroy(cuda->self, comm);

    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, a);
    cuda->buffer_free(cuda->self, 0, b);
    free(src);
    free(got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_info),
        cmocka_unit_test(test_copies_streams_events),
        cmocka_unit_test(test_matmul_matches_cpu),
        cmocka_unit_test(test_unsupported_ops),
        cmocka_unit_test(test_nccl_one_rank),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* CTest's SKIP_RETURN_CODE: report "skipped" rather than "passed" without a device. */
    return failed == 0 && g_no_device ? 77 : failed;
}
