/* Handle lifetimes and polling threads, as a binding meets them: handles destroyed in any order
 * (a garbage collector picks it, not the user), and several threads polling one engine (singly
 * and in batches) while another steps it, each reading what it was handed while the others
 * poll on. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine_stack.h"

static pagoda_request_options_t greedy(int64_t max_tokens) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = max_tokens;
    return o;
}

/* Runs the engine until idle and drains its outputs; returns how many requests finished. */
static int run_to_end(pagoda_engine_t *engine) {
    int finished = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK)
            if (out.request_finished) ++finished;
    }
    return finished;
}

/* The cache's, the mesh's and the model's handles go first; the engine still serves, then goes
 * last and takes the cache with it (ASan sees no stray read of the cache's handle). */
static void test_engine_outlives_its_handles(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_kv_cache_destroy(s.cache);
    pagoda_mesh_destroy(s.mesh);
    pagoda_model_destroy(s.model);
    const pagoda_request_options_t o = greedy(8);
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(s.engine, "Once upon a time", 16, &o, &id));
    assert_int_equal(run_to_end(s.engine), 1);
    pagoda_engine_destroy(s.engine);
}

/* An engine destroyed with work in flight frees the cache for the next engine. */
static void test_cache_serves_the_next_engine(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_engine_t *second = NULL;
    assert_int_equal(pagoda_engine_create(s.model, s.mesh, NULL, s.cache, NULL, &second),
                     PAGODA_ERR_INVALID_ARGUMENT);
    const pagoda_request_options_t o = greedy(32);
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(s.engine, "Once upon a time", 16, &o, &id));
    TEST_ASSERT_OK(pagoda_engine_step(s.engine));
    pagoda_engine_destroy(s.engine);
    pagoda_kv_cache_stats_t st = engine_stack_kv_stats(&s);
    assert_int_equal(st.blocks_used, 0);
    TEST_ASSERT_OK(pagoda_engine_create(s.model, s.mesh, NULL, s.cache, NULL, &s.engine));
    TEST_ASSERT_OK(pagoda_engine_submit_text(s.engine, "Once upon a time", 16, &o, &id));
    assert_int_equal(run_to_end(s.engine), 1);
    engine_stack_close(&s);
}

typedef struct poller {
    pagoda_engine_t *engine;
    atomic_int *stop;
    atomic_int *finished;
    size_t batch; /* 0: pagoda_engine_poll; else pagoda_engine_poll_batch with this capacity */
    long bytes;   /* text bytes read back, so the reads cannot be optimized away */
} poller_t;

/* Reads everything the output points to, slowly enough that other threads poll meanwhile:
 * with one buffer per engine their polls freed this memory. */
static void read_output(poller_t *p, const pagoda_output_t *out) {
    for (int pass = 0; pass < 50; ++pass) {
        p->bytes += (long)strlen(out->text);
        for (size_t i = 0; i < out->n_tokens; ++i) p->bytes += out->token_ids[i] >= 0;
    }
    if (out->request_finished) atomic_fetch_add(p->finished, 1);
}

static void *poll_and_read(void *arg) {
    poller_t *p = (poller_t *)arg;
    pagoda_output_t outs[4];
    assert_true(p->batch <= 4);
    for (;;) {
        memset(outs, 0, sizeof outs);
        outs[0].struct_size = sizeof outs[0];
        size_t n = 0;
        if (p->batch == 0)
            n = pagoda_engine_poll(p->engine, &outs[0]) == PAGODA_OK;
        else
            TEST_ASSERT_OK(pagoda_engine_poll_batch(p->engine, outs, p->batch, &n));
        if (n == 0) {
            if (atomic_load(p->stop)) break;
            continue;
        }
        for (size_t i = 0; i < n; ++i) read_output(p, &outs[i]);
    }
    return NULL;
}

static void test_polls_from_several_threads(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    enum { kRequests = 24, kThreads = 3 };
    const pagoda_request_options_t o = greedy(24);
    for (int i = 0; i < kRequests; ++i) {
        uint64_t id = 0;
        TEST_ASSERT_OK(pagoda_engine_submit_text(s.engine, "Once upon a time", 16, &o, &id));
    }
    atomic_int stop = 0, finished = 0;
    poller_t pollers[kThreads];
    pthread_t threads[kThreads];
    for (int t = 0; t < kThreads; ++t) {
        pollers[t] = (poller_t){s.engine, &stop, &finished, (size_t)t * 2, 0}; /* 0, 2, 4 */
        assert_int_equal(pthread_create(&threads[t], NULL, poll_and_read, &pollers[t]), 0);
    }
    while (pagoda_engine_has_work(s.engine)) TEST_ASSERT_OK(pagoda_engine_step(s.engine));
    atomic_store(&stop, 1);
    for (int t = 0; t < kThreads; ++t) pthread_join(threads[t], NULL);
    /* Every request's last output reached exactly one poller. */
    assert_int_equal(atomic_load(&finished), kRequests);
    engine_stack_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_outlives_its_handles),
        cmocka_unit_test(test_cache_serves_the_next_engine),
        cmocka_unit_test(test_polls_from_several_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
