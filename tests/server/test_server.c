/* The HTTP server through the public API on stories260K: options and lifecycle, every endpoint,
 * errors as OpenAI's error object, keep-alive and pipelining, chunked request bodies, and the
 * SSE framing of streams. test_server_faults.c has the limits, timeouts and faults. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_fixture.h"

#define COMPLETIONS "/v1/completions"

static server_fixture_t *fx(void **state) { return (server_fixture_t *)*state; }

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

static void ignore_output(void *user, const pagoda_output_t *output) {
    (void)user;
    (void)output;
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
    test_expect_failure(pagoda_server_add_model(s, "x", NULL), PAGODA_ERR_INVALID_HANDLE, "engine");
    /* An engine that hands its outputs to a callback would leave the server's clients waiting. */
    engine_stack_t with_callback;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.on_output = ignore_output;
    engine_stack_open(&with_callback, NULL, &eo);
    test_expect_failure(pagoda_server_add_model(s, "cb", with_callback.engine), PAGODA_ERR_INVALID_ARGUMENT,
                        "callback");
    engine_stack_close(&with_callback);
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
        {"POST", COMPLETIONS, "{\"prompt\":[\"a\",\"\"]}", 400, "prompt"},
        {"POST", COMPLETIONS, "{\"prompt\":[[1,2],[]]}", 400, "prompt"},
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
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"echo\":\"yes\"}", 400, "echo"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"suffix\":\"end\",\"echo\":true}", 400, "echo"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"prompt_logprobs\":1,\"stream\":true}", 400, "prompt_logprobs"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"logit_bias\":{\"five\":1}}", 400, "logit_bias"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"suffix\":\"end\"}", 400, "suffix"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"frobnicate\":1}", 400, "frobnicate"},
        {"POST", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":100000000}", 400, "max_tokens"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 400, "messages"},
        {"POST", "/v1/chat/completions", "{\"messages\":[]}", 400, "messages"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"king\",\"content\":\"hi\"}]}", 400, "messages[0].role"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400, "messages[0].content[0]"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":2}", 400, "logprobs"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_logprobs\":2}", 400, "top_logprobs"},
        {"POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{}]}", 400, "tools[0].type"},
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_health_while_loading),
        cmocka_unit_test_setup_teardown(test_health_models_metrics, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_completion, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_tokenize, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_errors, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_keep_alive_and_pipelining, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_chunked_body, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_streaming, server_fixture_setup, server_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
