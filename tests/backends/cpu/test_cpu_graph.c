/* Graphs on the CPU backend: a recorded stream replays its launches, memsets and device copies
 * with whatever memory holds at launch time; bad launches and host work spoil a recording. The
 * cases are shared with the CUDA backend's test (tests/backends/common/graph_cases.h). */
#include "../common/graph_cases.h"

static const pagoda_backend_iface_t *graph_backend(void) { return test_cpu_iface(); }

/* The descriptor is copied whole at record time, including bytes past the fields this backend
 * knows (a newer caller's zeroed tail), so a caller may reuse its structs at once. */
static void test_cpu_graph_keeps_larger_descriptor(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_backend_stream_t *s = test_stream_create(t);
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, out[4] = {0};
    struct {
        pagoda_op_add_t add;
        uint64_t newer_fields[4];
    } big;
    memset(&big, 0, sizeof big);
    big.add.struct_size = sizeof big;
    big.add.n = 4;
    big.add.a = a;
    big.add.b = b;
    big.add.out = out;
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    TEST_ASSERT_OK(t->kernels->launch(t->self, s, PAGODA_OP_ADD, &big));
    memset(&big, 0xFF, sizeof big);
    pagoda_backend_graph_t *graph = NULL;
    TEST_ASSERT_OK(t->graph_capture_end(t->self, s, &graph));
    assert_true(out[0] == 0.0f);
    b[0] = 100;
    TEST_ASSERT_OK(t->graph_launch(t->self, graph, s));
    assert_true(out[0] == 101.0f && out[3] == 44.0f);
    t->graph_destroy(t->self, graph);
    test_stream_destroy(t, s);
}

/* A replayed launch is checked again against the memory it reads: a token id that went out of
 * range after recording fails the graph's launch, naming the op. */
static void test_cpu_graph_revalidates_on_launch(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_backend_stream_t *s = test_stream_create(t);
    float table[2 * 3] = {0, 1, 2, 3, 4, 5}, out[3] = {0};
    int32_t ids[1] = {1};
    pagoda_op_embedding_t e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.table_dtype = PAGODA_DTYPE_F32;
    e.vocab_size = 2;
    e.dim = 3;
    e.n_tokens = 1;
    e.table = table;
    e.ids = ids;
    e.out = out;
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    TEST_ASSERT_OK(t->kernels->launch(t->self, s, PAGODA_OP_EMBEDDING, &e));
    pagoda_backend_graph_t *graph = NULL;
    TEST_ASSERT_OK(t->graph_capture_end(t->self, s, &graph));
    TEST_ASSERT_OK(t->graph_launch(t->self, graph, s));
    assert_true(out[0] == 3.0f);
    ids[0] = 7;
    test_expect_failure(t->graph_launch(t->self, graph, s), PAGODA_ERR_INVALID_ARGUMENT,
                        "embedding");
    /* Only on the stream it was recorded on. */
    pagoda_backend_stream_t *other = test_stream_create(t);
    ids[0] = 0;
    test_expect_failure(t->graph_launch(t->self, graph, other), PAGODA_ERR_INVALID_ARGUMENT,
                        "another stream");
    test_stream_destroy(t, other);
    t->graph_destroy(t->self, graph);
    test_stream_destroy(t, s);
}

/* A stream destroyed while recording frees the recording (ASan checks the leak). */
static void test_cpu_graph_stream_destroyed_while_recording(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_backend_stream_t *s = test_stream_create(t);
    TEST_ASSERT_OK(t->graph_capture_begin(t->self, s));
    TEST_ASSERT_OK(t->memset(t->self, s, &(float){0}, 0, sizeof(float)));
    test_stream_destroy(t, s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        GRAPH_TESTS,
        cmocka_unit_test(test_cpu_graph_keeps_larger_descriptor),
        cmocka_unit_test(test_cpu_graph_revalidates_on_launch),
        cmocka_unit_test(test_cpu_graph_stream_destroyed_while_recording),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
