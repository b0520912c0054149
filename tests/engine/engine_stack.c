#include "engine_stack.h"

#include <string.h>

void engine_stack_open(engine_stack_t *s, const pagoda_kv_cache_options_t *kv_options,
                       const pagoda_engine_options_t *engine_options) {
    memset(s, 0, sizeof *s);
    TEST_ASSERT_OK(pagoda_model_open(ENGINE_STACK_MODEL, NULL, &s->model));
    TEST_ASSERT_OK(pagoda_mesh_create(NULL, &s->mesh));
    TEST_ASSERT_OK(pagoda_kv_cache_create(s->model, s->mesh, NULL, kv_options, &s->cache));
    TEST_ASSERT_OK(
        pagoda_engine_create(s->model, s->mesh, NULL, s->cache, engine_options, &s->engine));
}

pagoda_kv_cache_stats_t engine_stack_kv_stats(const engine_stack_t *s) {
    pagoda_kv_cache_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(s->cache, &st));
    return st;
}

pagoda_engine_stats_t engine_stack_engine_stats(const engine_stack_t *s) {
    pagoda_engine_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TEST_ASSERT_OK(pagoda_engine_get_stats(s->engine, &st));
    return st;
}

void engine_stack_close(engine_stack_t *s) {
    assert_int_equal(pagoda_engine_has_work(s->engine), 0);
    pagoda_kv_cache_stats_t st = engine_stack_kv_stats(s);
    assert_int_equal(st.blocks_used, 0);
    assert_int_equal(st.swap_blocks_used, 0);
    pagoda_engine_destroy(s->engine);
    st = engine_stack_kv_stats(s);
    assert_int_equal(st.blocks_used, 0);
    pagoda_kv_cache_destroy(s->cache);
    pagoda_mesh_destroy(s->mesh);
    pagoda_model_destroy(s->model);
    memset(s, 0, sizeof *s);
}
