/* The HTTP server through the public API on stories260K: every endpoint, keep-alive, chunked
 * bodies, limits, timeouts, errors, the API key, CORS, SSE framing, a client that leaves
 * mid-request (its engine request aborted, its KV blocks freed), a graceful stop with requests in
 * flight, and a server on the host's libuv loop. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <uv.h>

#include "server_fixture.h"

#define COMPLETIONS "/v1/completions"
static const char *kGreedy =
    "{\"model\":\"stories\",\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0}";

static server_fixture_t *fx(void **state) { return (server_fixture_t *)*state; }

static int setup(void **state) {
    server_fixture_t *f = test_xcalloc(1, sizeof *f);
    server_fixture_start(f, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    server_fixture_stop(fx(state));
    free(*state);
    return 0;
}

static void expect_error(const http_reply_t *r, int status, const char *param) {
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
static char *completion_text(const char *body) {
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

static void test_health_models_metrics(void **state) {
    server_fixture_t *f = fx(state);
    http_reply_t r;
    http_request(f->port, "GET", "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    http_request(f->port, "GET", "/v1/models", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"object\":\"list\""));
    assert_non_null(strstr(r.body, "\"id\":\"stories\""));
    assert_non_null(strstr(r.body, "\"max_model_len\":"));
    http_reply_free(&r);
    http_request(f->port, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "# TYPE pagoda_num_requests_running gauge"));
    assert_non_null(strstr(r.body, "pagoda_kv_cache_blocks_used{model_name=\"stories\"} 0"));
    /* promtool lints the text where it is installed (CI installs it). */
    if (system("command -v promtool >/dev/null 2>&1") == 0) {
        FILE *p = popen("promtool check metrics", "w");
        assert_non_null(p);
        fwrite(r.body, 1, r.body_len, p);
        assert_int_equal(pclose(p), 0);
    } else if (getenv("CI") != NULL) {
        fail_msg("promtool is missing (install Debian's prometheus package)");
    }
    http_reply_free(&r);
}

static void test_health_while_loading(void **state) {
    (void)state;
    pagoda_server_t *s;
    TEST_ASSERT_OK(pagoda_server_create(NULL, &s));
    TEST_ASSERT_OK(pagoda_server_start(s));
    int port = pagoda_server_port(s);
    http_reply_t r;
    http_request(port, "GET", "/health", NULL, NULL, &r);
    expect_error(&r, 503, NULL);
    http_reply_free(&r);
    http_request(port, "POST", COMPLETIONS, NULL, kGreedy, &r);
    expect_error(&r, 404, "model");
    http_reply_free(&r);
    http_request(port, "POST", COMPLETIONS, NULL, "{\"prompt\":\"x\"}", &r);
    expect_error(&r, 503, "model");
    http_reply_free(&r);
    engine_stack_t stack;
    engine_stack_open(&stack, NULL, NULL);
    TEST_ASSERT_OK(pagoda_server_add_model(s, "stories", stack.engine));
    test_expect_failure(pagoda_server_add_model(s, "stories", stack.engine), PAGODA_ERR_ALREADY_EXISTS, "served");
    http_request(port, "GET", "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    http_reply_free(&r);
    /* A second start, bad arguments. */
    test_expect_failure(pagoda_server_start(s), PAGODA_ERR_INVALID_ARGUMENT, "started already");
    test_expect_failure(pagoda_server_add_model(s, "", stack.engine), PAGODA_ERR_INVALID_ARGUMENT, "name");
    test_expect_failure(pagoda_server_add_model(NULL, "x", stack.engine), PAGODA_ERR_INVALID_HANDLE, "server");
    pagoda_server_destroy(s);
    engine_stack_close(&stack);
}

static void test_options(void **state) {
    (void)state;
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.port, 0);
    assert_null(o.host);
    assert_int_equal(o.max_header_bytes, 16384);
    pagoda_server_t *s = NULL;
    o.port = 70000;
    test_expect_failure(pagoda_server_create(&o, &s), PAGODA_ERR_INVALID_ARGUMENT, "port");
    pagoda_server_options_default(&o);
    o.api_key = "";
    test_expect_failure(pagoda_server_create(&o, &s), PAGODA_ERR_INVALID_ARGUMENT, "api_key");
    pagoda_server_options_default(&o);
    o.host = "not-an-address";
    TEST_ASSERT_OK(pagoda_server_create(&o, &s));
    test_expect_failure(pagoda_server_start(s), PAGODA_ERR_INVALID_ARGUMENT, "host");
    pagoda_server_destroy(s);
    /* A port in use. */
    pagoda_server_t *a, *b;
    pagoda_server_options_default(&o);
    TEST_ASSERT_OK(pagoda_server_create(&o, &a));
    TEST_ASSERT_OK(pagoda_server_start(a));
    o.port = pagoda_server_port(a);
    TEST_ASSERT_OK(pagoda_server_create(&o, &b));
    test_expect_failure(pagoda_server_start(b), PAGODA_ERR_IO, "address already in use");
    pagoda_server_destroy(b);
    pagoda_server_destroy(a);
    assert_int_equal(pagoda_server_port(NULL), -1);
    assert_int_equal(pagoda_server_is_running(NULL), 0);
    pagoda_server_destroy(NULL);
}

static void test_completion(void **state) {
    server_fixture_t *f = fx(state);
    http_reply_t a, b;
    http_request(f->port, "POST", COMPLETIONS, NULL, kGreedy, &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.body, "\"object\":\"text_completion\""));
    assert_non_null(strstr(a.body, "\"finish_reason\":\"length\""));
    assert_non_null(strstr(a.body, "\"completion_tokens\":12"));
    assert_non_null(strstr(a.body, "\"prompt_tokens\":"));
    /* Greedy is deterministic. */
    http_request(f->port, "POST", COMPLETIONS, NULL, kGreedy, &b);
    assert_int_equal(b.status, 200);
    char *ta = completion_text(a.body), *tb = completion_text(b.body);
    assert_true(strlen(ta) > 0);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    http_reply_free(&a);
    http_reply_free(&b);
    /* Token prompt, n = 2, logprobs, stop, the model field left out (one model served). */
    http_request(f->port, "POST", COMPLETIONS, NULL,
                 "{\"prompt\":[1,403,251,263,31],\"max_tokens\":5,\"n\":2,\"logprobs\":2,\"seed\":7,"
                 "\"stop\":[\"zzzz\"],\"top_k\":20,\"min_p\":0.01,\"repetition_penalty\":1.1}",
                 &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.body, "\"index\":0"));
    assert_non_null(strstr(a.body, "\"index\":1"));
    assert_non_null(strstr(a.body, "\"token_logprobs\":["));
    assert_non_null(strstr(a.body, "\"top_logprobs\":[{"));
    assert_null(strstr(a.body, "{\"\\\""));  /* keys are the pieces, not JSON-quoted pieces */
    assert_non_null(strstr(a.body, "\"completion_tokens\":10"));
    http_reply_free(&a);
    /* A stop string ends with "stop". */
    http_request(f->port, "POST", COMPLETIONS, NULL,
                 "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,\"temperature\":0,\"stop\":\" \"}", &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.body, "\"finish_reason\":\"stop\""));
    http_reply_free(&a);
}

static void test_tokenize(void **state) {
    server_fixture_t *f = fx(state);
    http_reply_t r;
    http_request(f->port, "POST", "/tokenize", NULL, "{\"model\":\"stories\",\"prompt\":\"Once upon a time\"}", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"tokens\":[1,"));
    assert_non_null(strstr(r.body, "\"count\":"));
    const char *t = strstr(r.body, "\"tokens\":[");
    char body[512];
    snprintf(body, sizeof body, "{\"model\":\"stories\",\"tokens\":%.*s]}", (int)(strchr(t, ']') - t - 9), t + 9);
    http_reply_free(&r);
    http_request(f->port, "POST", "/detokenize", NULL, body, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "Once upon a time\"}"));
    http_reply_free(&r);
    http_request(f->port, "POST", "/detokenize", NULL, "{\"tokens\":[1,99999999]}", &r);
    expect_error(&r, 400, "tokens");
    http_reply_free(&r);
    http_request(f->port, "POST", "/tokenize", NULL, "{\"prompt\":5}", &r);
    expect_error(&r, 400, "prompt");
    http_reply_free(&r);
}

static void test_errors(void **state) {
    server_fixture_t *f = fx(state);
    static const struct {
        const char *method, *path, *body;
        int status;
        const char *param;
    } cases[] = {
        {"POST", COMPLETIONS, "{not json", 400, NULL},
        {"POST", COMPLETIONS, "[1,2]", 400, NULL},
        {"POST", COMPLETIONS, "{\"model\":\"nope\",\"prompt\":\"x\"}", 404, "model"},
        {"POST", COMPLETIONS, "{\"model\":5,\"prompt\":\"x\"}", 400, "model"},
        {"POST", COMPLETIONS, "{\"model\":\"stories\"}", 400, "prompt"},
        {"POST", COMPLETIONS, "{\"prompt\":\"\"}", 400, "prompt"},
        {"POST", COMPLETIONS, "{\"prompt\":[\"a\",\"b\"]}", 400, "prompt"},
        {"POST", COMPLETIONS, "{\"prompt\":[1,-4]}", 400, "prompt"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":\"ten\"}", 400, "max_tokens"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":0}", 400, "max_tokens"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":1.5}", 400, "max_tokens"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"temperature\":-1}", 400, "temperature"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"top_p\":0}", 400, "top_p"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"n\":0}", 400, "n"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"n\":2,\"best_of\":1}", 400, "best_of"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"stop\":7}", 400, "stop"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"stream\":\"yes\"}", 400, "stream"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}", 400, "stream_options"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"logprobs\":true}", 400, "logprobs"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"echo\":true}", 400, "echo"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"logit_bias\":{\"5\":1}}", 400, "logit_bias"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"suffix\":\"end\"}", 400, "suffix"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"frobnicate\":1}", 400, "frobnicate"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":100000000}", 400, "max_tokens"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 501, "messages"},
        {"POST", "/v1/chat/completions", "{\"messages\":[]}", 400, "messages"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"king\",\"content\":\"hi\"}]}", 400, "messages[0].role"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400, "messages[0].content[0]"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":2}", 400, "logprobs"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_logprobs\":2}", 400, "top_logprobs"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{}]}", 400, "tools"},
        {"GET", "/v1/nothing", NULL, 404, NULL},
        {"GET", COMPLETIONS, NULL, 405, NULL},
        {"DELETE", "/v1/models", NULL, 405, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_reply_t r;
        http_request(f->port, cases[i].method, cases[i].path, NULL, cases[i].body, &r);
        if (r.status != cases[i].status) fprintf(stderr, "case %zu: %s\n", i, cases[i].body ? cases[i].body : "");
        expect_error(&r, cases[i].status, cases[i].param);
        if (cases[i].status == 405) {
            char allow[64];
            assert_non_null(http_header(&r, "Allow", allow, sizeof allow));
        }
        http_reply_free(&r);
    }
    /* Malformed HTTP: an error and a closed connection, never a hang. */
    int fd = http_connect(f->port);
    http_send_str(fd, "THIS IS NOT HTTP\r\n\r\n");
    http_reply_t r;
    assert_int_equal(http_read_reply(fd, &r, 5000), 0);
    expect_error(&r, 400, NULL);
    assert_true(http_wait_closed(fd, 5000));
    http_reply_free(&r);
    http_close(fd);
}

static void test_keep_alive_and_pipelining(void **state) {
    server_fixture_t *f = fx(state);
    int fd = http_connect(f->port);
    char req[512];
    int n = snprintf(req, sizeof req,
                     "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(kGreedy), kGreedy);
    for (int i = 0; i < 3; i++) {
        http_send(fd, req, (size_t)n);
        http_reply_t r;
        assert_int_equal(http_read_reply(fd, &r, 30000), 0);
        assert_int_equal(r.status, 200);
        char v[32];
        assert_string_equal(http_header(&r, "Connection", v, sizeof v), "keep-alive");
        http_reply_free(&r);
    }
    /* Three requests in one write: three answers in order. */
    char three[2048] = "";
    for (int i = 0; i < 2; i++) strcat(three, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    strcat(three, req);
    http_send_str(fd, three);
    for (int i = 0; i < 3; i++) {
        http_reply_t r;
        assert_int_equal(http_read_reply(fd, &r, 30000), 0);
        assert_int_equal(r.status, 200);
        if (i == 2) assert_non_null(strstr(r.body, "text_completion"));
        http_reply_free(&r);
    }
    /* Connection: close is honoured. */
    http_send_str(fd, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    http_reply_t r;
    assert_int_equal(http_read_reply(fd, &r, 5000), 0);
    assert_int_equal(r.status, 200);
    assert_true(http_wait_closed(fd, 5000));
    http_reply_free(&r);
    http_close(fd);
}

static void test_chunked_body(void **state) {
    server_fixture_t *f = fx(state);
    int fd = http_connect(f->port);
    const char *body = kGreedy;
    size_t len = strlen(body), half = len / 2;
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "%zx\r\n%.*s\r\n%zx\r\n%s\r\n0\r\n\r\n",
                     half, (int)half, body, len - half, body + half);
    /* Sent in small pieces, as a slow client would. */
    for (int i = 0; i < n; i += 7) {
        http_send(fd, req + i, (size_t)(n - i < 7 ? n - i : 7));
        if (i % 70 == 0) sleep_ms(1);
    }
    http_reply_t r;
    assert_int_equal(http_read_reply(fd, &r, 30000), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"completion_tokens\":12"));
    http_reply_free(&r);
    http_close(fd);
}

static void test_streaming(void **state) {
    server_fixture_t *f = fx(state);
    http_reply_t plain, r;
    http_request(f->port, "POST", COMPLETIONS, NULL, kGreedy, &plain);
    char *want = completion_text(plain.body);
    http_request(f->port, "POST", COMPLETIONS, NULL,
                 "{\"model\":\"stories\",\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0,"
                 "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                 &r);
    assert_int_equal(r.status, 200);
    char v[64];
    assert_string_equal(http_header(&r, "Content-Type", v, sizeof v), "text/event-stream");
    assert_true(r.n_chunks >= 3);
    /* Every chunk is whole events: "data: ...\n\n"; the last is [DONE]; the one before it the usage. */
    char got[1024] = "";
    for (size_t i = 0; i < r.n_chunks; i++) {
        const char *c = r.chunks[i];
        assert_memory_equal(c, "data: ", 6);
        assert_int_equal(strcmp(c + strlen(c) - 2, "\n\n"), 0);
        if (i + 1 == r.n_chunks) {
            assert_string_equal(c, "data: [DONE]\n\n");
        } else if (i + 2 == r.n_chunks) {
            assert_non_null(strstr(c, "\"choices\":[]"));
            assert_non_null(strstr(c, "\"completion_tokens\":12"));
        } else {
            assert_non_null(strstr(c, "\"usage\":null"));
            char *t = completion_text(c);
            strcat(got, t);
            free(t);
        }
    }
    assert_non_null(strstr(r.chunks[r.n_chunks - 3], "\"finish_reason\":\"length\""));
    assert_string_equal(got, want);
    free(want);
    http_reply_free(&plain);
    http_reply_free(&r);
}

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

/* Sends one completion request on a new connection without reading the answer. */
static int send_completion(int port, const char *body) {
    int fd = http_connect(port);
    char req[1024];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    assert_int_equal(http_send(fd, req, (size_t)n), 0);
    return fd;
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
    char *all = NULL;
    size_t len = 0;
    for (;;) {
        char buf[65536];
        ssize_t n = recv(stream, buf, sizeof buf, 0);
        if (n <= 0) break;
        all = realloc(all, len + (size_t)n + 1);
        memcpy(all + len, buf, (size_t)n);
        len += (size_t)n;
        all[len] = '\0';
    }
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
    char *all = NULL;
    size_t len = 0;
    for (;;) {
        char buf[65536];
        ssize_t n = recv(stream, buf, sizeof buf, 0);
        if (n <= 0) break;
        all = realloc(all, len + (size_t)n + 1);
        memcpy(all + len, buf, (size_t)n);
        len += (size_t)n;
        all[len] = '\0';
    }
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
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_health_while_loading),
        cmocka_unit_test_setup_teardown(test_health_models_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokenize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_alive_and_pipelining, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streaming, setup, teardown),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_api_key),
        cmocka_unit_test(test_cors),
        cmocka_unit_test_setup_teardown(test_disconnect_aborts, setup, teardown),
        cmocka_unit_test(test_graceful_stop_finishes),
        cmocka_unit_test(test_graceful_stop_aborts),
        cmocka_unit_test(test_host_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
