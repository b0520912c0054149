#define _POSIX_C_SOURCE 200809L
#include "server_fixture.h"

#include <string.h>
#include <time.h>

void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void server_fixture_start(server_fixture_t *f, const pagoda_server_options_t *options) {
    memset(f, 0, sizeof *f);
    engine_stack_open(&f->stack, NULL, NULL);
    TEST_ASSERT_OK(pagoda_server_create(options, &f->server));
    TEST_ASSERT_OK(pagoda_server_add_model(f->server, "stories", f->stack.engine));
    TEST_ASSERT_OK(pagoda_server_start(f->server));
    f->port = pagoda_server_port(f->server);
    assert_true(f->port > 0);
    assert_int_equal(pagoda_server_is_running(f->server), 1);
}

int server_fixture_wait_idle(server_fixture_t *f, int ms) {
    for (int waited = 0; waited <= ms; waited += 10) {
        pagoda_kv_cache_stats_t st = engine_stack_kv_stats(&f->stack);
        if (!pagoda_engine_has_work(f->stack.engine) && st.blocks_used == 0) return 1;
        sleep_ms(10);
    }
    return 0;
}

void server_fixture_stop(server_fixture_t *f) {
    TEST_ASSERT_OK(pagoda_server_stop(f->server));
    assert_int_equal(pagoda_server_is_running(f->server), 0);
    assert_int_equal(pagoda_server_port(f->server), -1);
    pagoda_server_destroy(f->server);
    f->server = NULL;
    assert_true(server_fixture_wait_idle(f, 5000));
    engine_stack_close(&f->stack);
}
