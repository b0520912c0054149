#define _POSIX_C_SOURCE 200809L
#include "server_fixture.h"

#include <stdio.h>
#include <stdlib.h>
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

const char *const kGreedy =
    "{\"model\":\"stories\",\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0}";

void expect_error(const http_reply_t *r, int status, const char *param) {
    if (r->status != status) fprintf(stderr, "expected %d, got %d: %s\n", status, r->status, r->body);
    assert_int_equal(r->status, status);
    assert_non_null(strstr(r->body, "{\"error\":{"));
    assert_non_null(strstr(r->body, "\"message\":"));
    assert_non_null(strstr(r->body, "\"type\":"));
    assert_non_null(strstr(r->body, "\"code\":"));
    if (param != NULL) {
        char want[128];
        snprintf(want, sizeof want, "\"param\":\"%s\"", param);
        if (strstr(r->body, want) == NULL) fprintf(stderr, "no %s in %s\n", want, r->body);
        assert_non_null(strstr(r->body, want));
    }
}

/* The "text" of a non-streamed completion, copied. */
char *completion_text(const char *body) {
    const char *t = strstr(body, "\"text\":\"");
    assert_non_null(t);
    t += 8;
    const char *end = t;
    while (*end && !(*end == '"' && end[-1] != '\\')) end++;
    char *out = test_xmalloc((size_t)(end - t) + 1);
    memcpy(out, t, (size_t)(end - t));
    out[end - t] = '\0';
    return out;
}

/* Sends one completion request on a new connection without reading the answer. */
int send_completion(int port, const char *body) {
    int fd = http_connect(port);
    char req[1024];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    assert_int_equal(http_send(fd, req, (size_t)n), 0);
    return fd;
}

int server_fixture_setup(void **state) {
    server_fixture_t *f = test_xcalloc(1, sizeof *f);
    server_fixture_start(f, NULL);
    *state = f;
    return 0;
}

int server_fixture_teardown(void **state) {
    server_fixture_stop((server_fixture_t *)*state);
    free(*state);
    return 0;
}
