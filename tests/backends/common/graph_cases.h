/* Graph capture and replay through the plugin ABI, for any backend: included by
 * tests/backends/cpu/test_cpu_graph.c and tests/backends/cuda/test_cuda_graph.c, each of which
 * defines graph_backend() (the table to test, skipping the test where there is none) first.
 * Device memory is only touched through the table's copies, so the cases run on a GPU too. */
#ifndef PAGODA_TEST_GRAPH_CASES_H
#define PAGODA_TEST_GRAPH_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const pagoda_backend_iface_t *graph_backend(void);

#define GRAPH_VOCAB 5
#define GRAPH_DIM 8
#define GRAPH_TOKENS 3

static void *graph_alloc(const pagoda_backend_iface_t *t, size_t bytes) {
    void *p = NULL;
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 0, bytes, &p));
    assert_non_null(p);
    return p;
}

static void graph_upload(const pagoda_backend_iface_t *t, pagoda_backend_stream_t *s, void *dst,
                         const void *src, size_t bytes) {
    TEST_ASSERT_OK(t->copy(t->self, s, dst, src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
}

static void graph_download(const pagoda_backend_iface_t *t, pagoda_backend_stream_t *s, void *dst,
                           const void *src, size_t bytes) {
    TEST_ASSERT_OK(t->copy(t->self, s, dst, src, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
}

/* The device buffers of the small program below. */
typedef struct graph_program {
    void *table, *ids, *bias, *embedded, *sum, *copied, *zeroed;
} graph_program_t;

static void graph_program_alloc(const pagoda_backend_iface_t *t, graph_program_t *p) {
    p->table = graph_alloc(t, sizeof(float) * GRAPH_VOCAB * GRAPH_DIM);
    p->ids = graph_alloc(t, sizeof(int32_t) * GRAPH_TOKENS);
    p->bias = graph_alloc(t, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
    p->embedded = graph_alloc(t, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
    p->sum = graph_alloc(t, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
    p->copied = graph_alloc(t, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
    p->zeroed = graph_alloc(t, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
}

static void graph_program_free(const pagoda_backend_iface_t *t, graph_program_t *p) {
    t->buffer_free(t->self, 0, p->table);
    t->buffer_free(t->self, 0, p->ids);
    t->buffer_free(t->self, 0, p->bias);
    t->buffer_free(t->self, 0, p->embedded);
    t->buffer_free(t->self, 0, p->sum);
    t->buffer_free(t->self, 0, p->copied);
    t->buffer_free(t->self, 0, p->zeroed);
}

/* Issues embedding(table, ids) → add bias → device copy → memset of `zeroed`. The descriptors
 * are locals, gone (and scribbled over) once this returns: a graph must have kept its own. */
static pagoda_status_t graph_program_issue(const pagoda_backend_iface_t *t,
                                           pagoda_backend_stream_t *s, const graph_program_t *p) {
    pagoda_op_embedding_t e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.table_dtype = PAGODA_DTYPE_F32;
    e.vocab_size = GRAPH_VOCAB;
    e.dim = GRAPH_DIM;
    e.n_tokens = GRAPH_TOKENS;
    e.table = p->table;
    e.ids = (const int32_t *)p->ids;
    e.out = p->embedded;
    pagoda_status_t st = t->kernels->launch(t->self, s, PAGODA_OP_EMBEDDING, &e);
    memset(&e, 0xEE, sizeof e);
    if (st != PAGODA_OK) return st;
    pagoda_op_add_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n = GRAPH_TOKENS * GRAPH_DIM;
    a.a = p->embedded;
    a.b = p->bias;
    a.out = p->sum;
    st = t->kernels->launch(t->self, s, PAGODA_OP_ADD, &a);
    memset(&a, 0xEE, sizeof a);
    if (st != PAGODA_OK) return st;
    st = t->copy(t->self, s, p->copied, p->sum, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM,
                 PAGODA_COPY_DEVICE_TO_DEVICE);
    if (st != PAGODA_OK) return st;
    return t->memset(t->self, s, p->zeroed, 0, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
}

/* New inputs: ids and bias drawn from `seed`; the table is row r = r + column/100. */
static void graph_inputs(const pagoda_backend_iface_t *t, pagoda_backend_stream_t *s,
                         const graph_program_t *p, unsigned seed, int32_t *ids, float *bias) {
    float table[GRAPH_VOCAB * GRAPH_DIM];
    for (int r = 0; r < GRAPH_VOCAB; ++r)
        for (int c = 0; c < GRAPH_DIM; ++c) table[r * GRAPH_DIM + c] = (float)r + (float)c / 100.0f;
    for (int i = 0; i < GRAPH_TOKENS; ++i) ids[i] = (int32_t)((seed + 2u * (unsigned)i) % GRAPH_VOCAB);
    for (int i = 0; i < GRAPH_TOKENS * GRAPH_DIM; ++i) bias[i] = (float)(seed * 10u + (unsigned)i);
    graph_upload(t, s, p->table, table, sizeof table);
    graph_upload(t, s, p->ids, ids, sizeof(int32_t) * GRAPH_TOKENS);
    graph_upload(t, s, p->bias, bias, sizeof(float) * GRAPH_TOKENS * GRAPH_DIM);
    TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
}

static void graph_expect_outputs(const pagoda_backend_iface_t *t, pagoda_backend_stream_t *s,
                                 const graph_program_t *p, const int32_t *ids, const float *bias) {
    float copied[GRAPH_TOKENS * GRAPH_DIM], zeroed[GRAPH_TOKENS * GRAPH_DIM];
    graph_download(t, s, copied, p->copied, sizeof copied);
    graph_download(t, s, zeroed, p->zeroed, sizeof zeroed);
    for (int i = 0; i < GRAPH_TOKENS; ++i)
        for (int c = 0; c < GRAPH_DIM; ++c) {
            const float want = (float)ids[i] + (float)c / 100.0f + bias[i * GRAPH_DIM + c];
            if (copied[i * GRAPH_DIM + c] != want)
                fail_msg("token %d column %d: %g, expected %g", i, c,
                         (double)copied[i * GRAPH_DIM + c], (double)want);
            if (zeroed[i * GRAPH_DIM + c] != 0.0f) fail_msg("memset not replayed at %d", i);
        }
}

static void graph_fill(const pagoda_backend_iface_t *t, pagoda_backend_stream_t *s, void *dst,
                       float value) {
    float host[GRAPH_TOKENS * GRAPH_DIM];
    for (int i = 0; i < GRAPH_TOKENS * GRAPH_DIM; ++i) host[i] = value;
    graph_upload(t, s, dst, host, sizeof host);
    TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
}

/* Record once; nothing runs while recording; each launch reads the inputs afresh. */
static void test_graph_replays_with_new_inputs(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = graph_backend();
    assert_non_null(t->graph_capture_begin);
    pagoda_backend_stream_t *s = test_stream_create(t);
    graph_program_t p;
    graph_program_alloc(t, &p);
    int32_t ids[GRAPH_TOKENS];
    float bias[GRAPH_TOKENS * GRAPH_DIM];
    graph_inputs(t, s, &p, 1, ids, bias);
    graph_fill(t, s, p.copied, -1.0f);
    graph_fill(t, s, p.zeroed, -1.0f);

    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    TEST_ASSERT_OK(graph_program_issue(t, s, &p));
    pagoda_backend_graph_t *graph = NULL;
    TEST_ASSERT_OK(t->graph_capture_end(t->self, s, &graph));
    assert_non_null(graph);

    float before[GRAPH_TOKENS * GRAPH_DIM];
    graph_download(t, s, before, p.copied, sizeof before);
    if (before[0] != -1.0f) fail_msg("recording ran the work (copied[0] = %g)", (double)before[0]);

    for (unsigned step = 2; step <= 3; ++step) {
        graph_inputs(t, s, &p, step, ids, bias);
        graph_fill(t, s, p.zeroed, -1.0f);
        TEST_ASSERT_OK(t->graph_launch(t->self, graph, s));
        TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
        graph_expect_outputs(t, s, &p, ids, bias);
    }
    /* The stream runs work op by op again after the capture. */
    graph_inputs(t, s, &p, 4, ids, bias);
    TEST_ASSERT_OK(graph_program_issue(t, s, &p));
    graph_expect_outputs(t, s, &p, ids, bias);

    t->graph_destroy(t->self, graph);
    graph_program_free(t, &p);
    test_stream_destroy(t, s);
}

/* A launch whose descriptor fails its checks is refused at once and spoils the recording;
 * capture_end reports it and the stream works again afterwards. */
static void test_graph_spoilt_by_bad_launch(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = graph_backend();
    pagoda_backend_stream_t *s = test_stream_create(t);
    graph_program_t p;
    graph_program_alloc(t, &p);
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    pagoda_op_add_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n = 0; /* dimensions are at least 1 */
    a.a = p.embedded;
    a.b = p.bias;
    a.out = p.sum;
    assert_int_not_equal(t->kernels->launch(t->self, s, PAGODA_OP_ADD, &a), PAGODA_OK);
    pagoda_backend_graph_t *graph = (pagoda_backend_graph_t *)0x1;
    test_expect_failure(t->graph_capture_end(t->self, s, &graph), PAGODA_ERR_INVALID_ARGUMENT,
                        "add");
    assert_null(graph);

    int32_t ids[GRAPH_TOKENS];
    float bias[GRAPH_TOKENS * GRAPH_DIM];
    graph_inputs(t, s, &p, 5, ids, bias);
    TEST_ASSERT_OK(graph_program_issue(t, s, &p));
    graph_expect_outputs(t, s, &p, ids, bias);
    graph_program_free(t, &p);
    test_stream_destroy(t, s);
}

/* Copies to or from the host and synchronising cannot be recorded. */
static void test_graph_refuses_host_work(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = graph_backend();
    pagoda_backend_stream_t *s = test_stream_create(t);
    graph_program_t p;
    graph_program_alloc(t, &p);
    float host[GRAPH_TOKENS * GRAPH_DIM] = {0};
    static const pagoda_copy_kind_t kinds[] = {PAGODA_COPY_HOST_TO_DEVICE,
                                               PAGODA_COPY_DEVICE_TO_HOST};
    for (size_t k = 0; k < 2; ++k) {
        TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
        pagoda_status_t st = kinds[k] == PAGODA_COPY_HOST_TO_DEVICE
                                 ? t->copy(t->self, s, p.sum, host, sizeof host, kinds[k])
                                 : t->copy(t->self, s, host, p.sum, sizeof host, kinds[k]);
        assert_int_not_equal(st, PAGODA_OK);
        pagoda_backend_graph_t *graph = NULL;
        assert_int_not_equal(t->graph_capture_end(t->self, s, &graph), PAGODA_OK);
        assert_null(graph);
    }
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    assert_int_not_equal(t->stream_synchronize(t->self, s), PAGODA_OK);
    pagoda_backend_graph_t *graph = NULL;
    assert_int_not_equal(t->graph_capture_end(t->self, s, &graph), PAGODA_OK);
    assert_null(graph);
    /* Usable again. */
    TEST_ASSERT_OK(t->copy(t->self, s, p.sum, host, sizeof host, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
    graph_program_free(t, &p);
    test_stream_destroy(t, s);
}

/* Misuse fails cleanly; destroying NULL is a no-op. */
static void test_graph_misuse(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = graph_backend();
    t->graph_destroy(t->self, NULL);
    pagoda_backend_stream_t *s = test_stream_create(t);
    pagoda_backend_graph_t *graph = NULL;
    assert_int_not_equal(t->graph_capture_end(t->self, s, &graph), PAGODA_OK); /* not begun */
    assert_null(graph);
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    assert_int_not_equal(t->graph_capture_begin(t->self, s), PAGODA_OK); /* already recording */
    TEST_ASSERT_OK(t->graph_capture_end(t->self, s, &graph)); /* an empty graph is a graph */
    assert_non_null(graph);
    TEST_ASSERT_OK(t->graph_launch(t->self, graph, s));
    TEST_ASSERT_OK(t->stream_synchronize(t->self, s));
    t->graph_destroy(t->self, graph);
    test_stream_destroy(t, s);
}

#define GRAPH_TESTS                                               \
    cmocka_unit_test(test_graph_replays_with_new_inputs),         \
        cmocka_unit_test(test_graph_spoilt_by_bad_launch),        \
        cmocka_unit_test(test_graph_refuses_host_work),           \
        cmocka_unit_test(test_graph_misuse)

#endif /* PAGODA_TEST_GRAPH_CASES_H */
