/* The HTTP server's limits and faults through the public API on stories260K: header and body
 * limits, timeouts, the API key, CORS, a client that leaves mid-request (its engine request
 * aborted, its KV blocks freed), a graceful stop with requests in flight (finished within the
 * deadline, aborted past it), a client that stops reading (cut off), and a server on the host's
 * libuv loop. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "server_fixture.h"

#define COMPLETIONS "/v1/completions"

static server_fixture_t *fx(void **state) { return (server_fixture_t *)*state; }

static void test_limits(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.max_body_bytes = 1024;
    o.max_header_bytes = 512;
    server_fixture_t f;
    server_fixture_start(&f, &o);
    char big[4096];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char body[4200];
    snprintf(body, sizeof body, "{\"prompt\":\"%s\"}", big);
    http_reply_t r;
    http_request(f.port, "POST", COMPLETIONS, NULL, body, &r);
    expect_error(&r, 413, NULL);
    http_reply_free(&r);
    /* A chunked body over the limit: refused while it arrives. */
    int fd = http_connect(f.port);
    http_send_str(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk_line[16];
    for (int i = 0; i < 3; i++) {
        snprintf(chunk_line, sizeof chunk_line, "%x\r\n", 600);
        http_send_str(fd, chunk_line);
        http_send(fd, big, 600);
        http_send_str(fd, "\r\n");
    }
    assert_int_equal(http_read_reply(fd, &r, 5000), 0);
    expect_error(&r, 413, NULL);
    assert_true(http_wait_closed(fd, 5000));
    http_reply_free(&r);
    http_close(fd);
    char headers[2048];
    snprintf(headers, sizeof headers, "X-Big: %.1000s\r\n", big);
    http_request(f.port, "GET", "/health", headers, NULL, &r);
    expect_error(&r, 431, NULL);
    http_reply_free(&r);
    server_fixture_stop(&f);
}

static void test_timeouts(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.idle_timeout_ms = 300;
    o.request_timeout_ms = 300;
    server_fixture_t f;
    server_fixture_start(&f, &o);
    /* A truncated request: 408, then closed. */
    int fd = http_connect(f.port);
    http_send_str(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pro");
    http_reply_t r;
    assert_int_equal(http_read_reply(fd, &r, 5000), 0);
    expect_error(&r, 408, NULL);
    assert_true(http_wait_closed(fd, 5000));
    http_reply_free(&r);
    http_close(fd);
    /* A slow one, a byte at a time, past the deadline. */
    fd = http_connect(f.port);
    const char *slow = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    int answered = 0;
    for (size_t i = 0; slow[i] != '\0'; i++) {
        if (http_send(fd, slow + i, 1) != 0) break;
        sleep_ms(40);
    }
    if (http_read_reply(fd, &r, 5000) == 0) answered = r.status;
    assert_int_equal(answered, 408);
    http_reply_free(&r);
    http_close(fd);
    /* An idle keep-alive connection is closed. */
    fd = http_connect(f.port);
    http_send_str(fd, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(http_read_reply(fd, &r, 5000), 0);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    assert_true(http_wait_closed(fd, 5000));
    http_close(fd);
    server_fixture_stop(&f);
}

static void test_api_key(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.api_key = "sesame";
    server_fixture_t f;
    server_fixture_start(&f, &o);
    http_reply_t r;
    http_request(f.port, "GET", "/v1/models", NULL, NULL, &r);
    expect_error(&r, 401, NULL);
    assert_non_null(strstr(r.body, "\"type\":\"authentication_error\""));
    http_reply_free(&r);
    http_request(f.port, "GET", "/v1/models", "Authorization: Bearer wrong\r\n", NULL, &r);
    expect_error(&r, 401, NULL);
    http_reply_free(&r);
    http_request(f.port, "POST", COMPLETIONS, "Authorization: Bearer sesame\r\n", kGreedy, &r);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    http_request(f.port, "GET", "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    server_fixture_stop(&f);
}

static void test_cors(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.cors_allowed_origins = "https://a.example, https://b.example";
    server_fixture_t f;
    server_fixture_start(&f, &o);
    http_reply_t r;
    char v[128];
    http_request(f.port, "OPTIONS", COMPLETIONS,
                 "Origin: https://b.example\r\nAccess-Control-Request-Method: POST\r\n"
                 "Access-Control-Request-Headers: authorization, content-type\r\n",
                 NULL, &r);
    assert_int_equal(r.status, 204);
    assert_string_equal(http_header(&r, "Access-Control-Allow-Origin", v, sizeof v), "https://b.example");
    assert_non_null(strstr(http_header(&r, "Access-Control-Allow-Methods", v, sizeof v), "POST"));
    assert_string_equal(http_header(&r, "Access-Control-Allow-Headers", v, sizeof v), "authorization, content-type");
    http_reply_free(&r);
    http_request(f.port, "OPTIONS", COMPLETIONS, "Origin: https://evil.example\r\n", NULL, &r);
    expect_error(&r, 403, NULL);
    assert_null(http_header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    http_reply_free(&r);
    http_request(f.port, "POST", COMPLETIONS, "Origin: https://a.example\r\n", kGreedy, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(http_header(&r, "Access-Control-Allow-Origin", v, sizeof v), "https://a.example");
    http_reply_free(&r);
    /* Errors carry it too, so that a page can read them. */
    http_request(f.port, "GET", "/nope", "Origin: https://a.example\r\n", NULL, &r);
    assert_int_equal(r.status, 404);
    assert_non_null(http_header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    http_reply_free(&r);
    server_fixture_stop(&f);
}

static const char *kLong =
    "{\"prompt\":\"Once upon a time\",\"max_tokens\":200,\"ignore_eos\":true,\"stream\":%s}";

static void test_disconnect_aborts(void **state) {
    server_fixture_t *f = fx(state);
    pagoda_engine_stats_t before = engine_stack_engine_stats(&f->stack);
    char body[256];
    /* Mid-stream: after the first event, the client leaves. */
    snprintf(body, sizeof body, kLong, "true");
    int fd = http_connect(f->port);
    char req[512];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    http_send(fd, req, (size_t)n);
    http_reply_t r;
    assert_int_equal(http_read_head_and_first_chunk(fd, &r, 30000), 0);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    assert_true(engine_stack_kv_stats(&f->stack).blocks_used > 0);
    http_close(fd);
    assert_true(server_fixture_wait_idle(f, 10000));
    /* Mid non-streamed request: the client leaves before the answer. */
    snprintf(body, sizeof body, kLong, "false");
    fd = http_connect(f->port);
    n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                 strlen(body), body);
    http_send(fd, req, (size_t)n);
    for (int i = 0; i < 500 && !pagoda_engine_has_work(f->stack.engine); i++) sleep_ms(2);
    http_close(fd);
    assert_true(server_fixture_wait_idle(f, 10000));
    pagoda_engine_stats_t after = engine_stack_engine_stats(&f->stack);
    assert_int_equal(after.requests_finished - before.requests_finished, 2);
    /* Fewer tokens than asked: they were aborted, not run to the end. */
    assert_true(after.generated_tokens - before.generated_tokens < 400);
}

/* A client that never reads its stream: once the unsent bytes pass the bound, the connection is
 * closed and the request aborted (its blocks freed) instead of queueing output forever. The
 * stream is made long (8 sequences with 20 logprobs a token: tens of MB) since the kernel's
 * socket buffers on loopback absorb a few MB before anything waits in the server. */
static void test_stalled_reader_is_cut_off(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.max_unsent_bytes = 4096;
    server_fixture_t f;
    server_fixture_start(&f, &o);
    pagoda_engine_metrics_t before;
    memset(&before, 0, sizeof before);
    before.struct_size = sizeof before;
    TEST_ASSERT_OK(pagoda_engine_get_metrics(f.stack.engine, &before));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int small = 2048; /* a small receive window, so the kernel buffers fill fast */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)f.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char *body = "{\"prompt\":\"Once upon a time\",\"max_tokens\":2000,\"ignore_eos\":true,"
                       "\"stream\":true,\"logprobs\":20,\"n\":8}";
    char req[512];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    assert_int_equal(send(fd, req, (size_t)n, 0), n);
    /* Never read: the server must give up on its own, before the request's natural end. */
    for (int i = 0; i < 5000 && !pagoda_engine_has_work(f.stack.engine); i++) sleep_ms(1);
    assert_true(server_fixture_wait_idle(&f, 30000));
    pagoda_engine_metrics_t after = before;
    TEST_ASSERT_OK(pagoda_engine_get_metrics(f.stack.engine, &after));
    assert_int_equal(after.requests_finished_aborted - before.requests_finished_aborted, 1);
    assert_int_equal(after.requests_finished_length, before.requests_finished_length);
    assert_int_equal(engine_stack_kv_stats(&f.stack).blocks_used, 0);
    close(fd);
    server_fixture_stop(&f);
}

static const char *kStreamLong =
    "{\"prompt\":\"Once upon a time\",\"max_tokens\":2000,\"ignore_eos\":true,\"stream\":true}";
static const char *kPlainLong = "{\"prompt\":\"Once upon a time\",\"max_tokens\":1000,\"ignore_eos\":true}";

/* Requests in flight when the server stops, within the drain deadline: they finish whole. */
static void test_graceful_stop_finishes(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.drain_timeout_ms = 60000;
    server_fixture_t f;
    server_fixture_start(&f, &o);
    int stream = send_completion(f.port, kStreamLong), plain = send_completion(f.port, kPlainLong);
    int idle = http_connect(f.port);
    http_reply_t r;
    assert_int_equal(http_read_head_and_first_chunk(stream, &r, 30000), 0);
    http_reply_free(&r);
    for (int i = 0; i < 1000 && engine_stack_engine_stats(&f.stack).requests_running < 2; i++) sleep_ms(1);
    TEST_ASSERT_OK(pagoda_server_stop(f.server));
    assert_int_equal(pagoda_server_is_running(f.server), 0);
    assert_int_equal(http_read_reply(plain, &r, 10000), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"completion_tokens\":1000"));
    char conn[32];
    assert_string_equal(http_header(&r, "Connection", conn, sizeof conn), "close");
    http_reply_free(&r);
    /* The stream's remaining bytes: whatever arrives until the close must end with [DONE]. */
    char *all = http_read_until_close(stream);
    assert_non_null(all);
    assert_non_null(strstr(all, "\"finish_reason\":\"length\""));
    assert_non_null(strstr(all, "data: [DONE]\n\n"));
    assert_null(strstr(all, "\"finish_reason\":\"abort\""));
    free(all);
    http_close(stream);
    http_close(plain);
    assert_true(http_wait_closed(idle, 5000));
    http_close(idle);
    assert_int_equal(http_connect(f.port), -1);
    server_fixture_stop(&f);
}

/* Past the drain deadline: streams end with "abort" and [DONE], others get 503, and nothing
 * stays lent in the KV cache. */
static void test_graceful_stop_aborts(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.drain_timeout_ms = 1;
    server_fixture_t f;
    server_fixture_start(&f, &o);
    int stream = send_completion(f.port, kStreamLong), plain = send_completion(f.port, kPlainLong);
    http_reply_t r;
    assert_int_equal(http_read_head_and_first_chunk(stream, &r, 30000), 0);
    http_reply_free(&r);
    for (int i = 0; i < 1000 && engine_stack_engine_stats(&f.stack).requests_running < 2; i++) sleep_ms(1);
    TEST_ASSERT_OK(pagoda_server_stop(f.server));
    assert_int_equal(pagoda_server_is_running(f.server), 0);
    char *all = http_read_until_close(stream);
    assert_non_null(all);
    assert_non_null(strstr(all, "\"finish_reason\":\"abort\""));
    assert_non_null(strstr(all, "data: [DONE]\n\n"));
    free(all);
    assert_int_equal(http_read_reply(plain, &r, 5000), 0);
    expect_error(&r, 503, NULL);
    http_reply_free(&r);
    http_close(stream);
    http_close(plain);
    server_fixture_stop(&f);
}

/* The server on the host's libuv loop, run by a thread of the test. */
static void run_loop(void *loop) {
    /* A host's loop thread blocks SIGPIPE, as server.h asks. */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
}

static void test_host_loop(void **state) {
    (void)state;
    engine_stack_t stack;
    engine_stack_open(&stack, NULL, NULL);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    pagoda_server_t *s;
    TEST_ASSERT_OK(pagoda_server_create(NULL, &s));
    TEST_ASSERT_OK(pagoda_server_add_model(s, "stories", stack.engine));
    test_expect_failure(pagoda_server_start_on_loop(s, NULL), PAGODA_ERR_INVALID_ARGUMENT, "uv_loop");
    TEST_ASSERT_OK(pagoda_server_start_on_loop(s, &loop));
    uv_thread_t thread;
    assert_int_equal(uv_thread_create(&thread, run_loop, &loop), 0);
    http_reply_t r;
    http_request(pagoda_server_port(s), "POST", COMPLETIONS, NULL, kGreedy, &r);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    /* From another thread, stop waits for the loop to finish the drain. */
    TEST_ASSERT_OK(pagoda_server_stop(s));
    assert_int_equal(pagoda_server_is_running(s), 0);
    uv_thread_join(&thread);
    assert_int_equal(uv_loop_close(&loop), 0);
    pagoda_server_destroy(s);
    engine_stack_close(&stack);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_api_key),
        cmocka_unit_test(test_cors),
        cmocka_unit_test_setup_teardown(test_disconnect_aborts, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test(test_stalled_reader_is_cut_off),
        cmocka_unit_test(test_graceful_stop_finishes),
        cmocka_unit_test(test_graceful_stop_aborts),
        cmocka_unit_test(test_host_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
