/* A collective that fails on one device of a mesh (the CPU backend's fail_collective fault,
 * set through PAGODA_BACKEND_CPU_CONFIG): the engine aborts the other devices' communicators,
 * so none waits for the failed one; the step returns the error on the caller's thread within
 * seconds; the scheduled requests end with an error output; the KV cache lends no block; and
 * the next steps serve new requests on rebuilt groups. Run under ASan in CI: nothing leaks. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define STORIES PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_failed_collective_fails_the_step(void **state) {
    (void)state;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(STORIES, NULL, &model));
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = "cpu:0-1";
    mo.axes = "tp=2";
    pagoda_mesh_t *mesh = NULL;
    TEST_ASSERT_OK(pagoda_mesh_create(&mo, &mesh));
    pagoda_kv_cache_t *cache = NULL;
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, NULL, &cache));
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine));

    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.0f;
    ro.max_tokens = 40;
    uint64_t ids[4];
    for (int i = 0; i < 4; ++i)
        TEST_ASSERT_OK(pagoda_engine_submit_text(engine, "Once upon a time", 16, &ro, &ids[i]));

    /* Each step all-reduces twice per layer and once for the logits; the fault is set for the
     * 50th collective on cpu:1, a few steps in. */
    pagoda_status_t failed = PAGODA_OK;
    double started = now_seconds(), took = 0.0;
    char message[512] = "";
    for (int step = 0; step < 40 && pagoda_engine_has_work(engine); ++step) {
        double t0 = now_seconds();
        pagoda_status_t s = pagoda_engine_step(engine);
        if (s != PAGODA_OK) {
            failed = s;
            took = now_seconds() - t0;
            snprintf(message, sizeof message, "%s", pagoda_last_error_message());
            break;
        }
    }
    printf("  step failed after %.3f s (%.3f s in all): %s\n", took, now_seconds() - started, message);
    assert_int_equal(failed, PAGODA_ERR_BACKEND);
    assert_non_null(strstr(message, "injected"));
    assert_true(took < 10.0);

    /* Every request ended with an error output; nothing holds a block. */
    int errors = 0;
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    while (pagoda_engine_poll(engine, &out) == PAGODA_OK)
        if (out.finish_reason == PAGODA_FINISH_ERROR) {
            assert_int_equal(out.status, PAGODA_ERR_BACKEND);
            ++errors;
        }
    assert_int_equal(errors, 4);
    assert_int_equal(pagoda_engine_has_work(engine), 0);
    pagoda_kv_cache_stats_t kv;
    memset(&kv, 0, sizeof kv);
    kv.struct_size = sizeof kv;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &kv));
    assert_int_equal(kv.blocks_used, 0);

    /* The fault fired once: the engine rebuilds its groups and serves the next request. */
    uint64_t id;
    TEST_ASSERT_OK(pagoda_engine_submit_text(engine, "Once upon a time", 16, &ro, &id));
    size_t tokens = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            assert_int_equal(out.status, PAGODA_OK);
            tokens += out.n_tokens;
        }
    }
    assert_int_equal(tokens, 40);
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &kv));
    assert_int_equal(kv.blocks_used, 0);

    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_collective_fails_the_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
