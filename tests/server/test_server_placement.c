/* A placement served (pagoda_server_add_placement) on four CPU devices, stories260K under two
 * names: model "a" with a replica on a two-stage pipeline (group 0, cpu:0-1) and one on cpu:2
 * (group 1), model "b" sharing group 0. The stage latencies are large (seconds), so that the
 * controller's choices depend on them and not on how fast this machine answers:
 *   - five requests for "a" in a row split over both groups (the replica that would finish
 *     first), every text equal to the greedy completion on one device;
 *   - then "b", whose group 0 is busy with "a"'s queue, is rejected at arrival (429 naming the
 *     SLO), and /metrics counts it; /v1/models lists each model once;
 *   - with "reject_late": false the same booking serves "b" late instead;
 *   - a placement that cannot run is refused whole, naming the group and the model: a device
 *     that does not exist, a model without a path, a file that does not open; a server that
 *     already serves a model refuses one. */
#define _GNU_SOURCE /* asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_fixture.h"

#define COMPLETIONS "/v1/completions"

static char *placement_json(const char *device_b, const char *path_a, int with_path_b) {
    char *json = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&json, &size);
    fprintf(f,
            "{\"models\": [{\"name\": \"a\", \"slo\": 30, \"path\": \"%s\"},"
            "             {\"name\": \"b\", \"slo\": 1%s%s%s}],"
            " \"groups\": ["
            "  {\"devices\": [0, 1], \"pipeline\": 2, \"tensor\": 1, \"replicas\": ["
            "     {\"model\": \"a\", \"stage_seconds\": [1.0, 1.0]},"
            "     {\"model\": \"b\", \"stage_seconds\": [0.3, 0.3]}]},"
            "  {\"devices\": [%s], \"pipeline\": 1, \"tensor\": 1, \"replicas\": ["
            "     {\"model\": \"a\", \"stage_seconds\": [1.5]}]}]}",
            path_a, with_path_b ? ", \"path\": \"" : "", with_path_b ? ENGINE_STACK_MODEL : "",
            with_path_b ? "\"" : "", device_b);
    fclose(f);
    return json;
}

static pagoda_server_t *start_server(int *port) {
    pagoda_server_options_t o;
    pagoda_server_options_default(&o);
    o.port = 0;
    pagoda_server_t *server = NULL;
    TEST_ASSERT_OK(pagoda_server_create(&o, &server));
    TEST_ASSERT_OK(pagoda_server_start(server));
    *port = pagoda_server_port(server);
    return server;
}

/* The value of the metric line starting with `prefix` (its labels included), or -1. */
static double metric(int port, const char *prefix) {
    http_reply_t r;
    http_request(port, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    double value = -1;
    for (const char *line = r.body; line != NULL && *line;) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) value = atof(line + strlen(prefix));
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    http_reply_free(&r);
    return value;
}

static void test_routes_and_rejects(void **state) {
    (void)state;
    /* The greedy text on one device, the reference for every replica. */
    server_fixture_t f;
    server_fixture_start(&f, NULL);
    http_reply_t r;
    http_request(f.port, "POST", COMPLETIONS, NULL, kGreedy, &r);
    assert_int_equal(r.status, 200);
    char *want = completion_text(r.body);
    http_reply_free(&r);
    server_fixture_stop(&f);

    int port = 0;
    pagoda_server_t *server = start_server(&port);
    char *json = placement_json("2", ENGINE_STACK_MODEL, 1);
    TEST_ASSERT_OK(pagoda_server_add_placement(server, json, "cpu", NULL, NULL));
    free(json);

    http_request(port, "GET", "/v1/models", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"id\":\"a\""));
    assert_non_null(strstr(r.body, "\"id\":\"b\""));
    assert_null(strstr(strstr(r.body, "\"id\":\"a\"") + 1, "\"id\":\"a\""));
    http_reply_free(&r);

    const char *body = "{\"model\": \"a\", \"prompt\": \"Once upon a time\", \"max_tokens\": 12, "
                       "\"temperature\": 0}";
    for (int i = 0; i < 5; i++) {
        http_request(port, "POST", COMPLETIONS, NULL, body, &r);
        if (r.status != 200) fail_msg("request %d answered %d: %s", i, r.status, r.body);
        char *text = completion_text(r.body);
        assert_string_equal(text, want);
        free(text);
        http_reply_free(&r);
    }
    free(want);
    /* Predicted finishes: 1.5 on group 1, then 2, 3, 4 on group 0's pipeline, then 4.5 on 1. */
    const double on_pipeline = metric(port, "pagoda_request_success_total{model_name=\"a\",placement_group=\"0\",finished_reason=\"length\"} ");
    const double alone = metric(port, "pagoda_request_success_total{model_name=\"a\",placement_group=\"1\",finished_reason=\"length\"} ");
    if (!(on_pipeline >= 1 && alone >= 1 && on_pipeline + alone == 5))
        fail_msg("the five requests went %g to group 0 and %g to group 1", on_pipeline, alone);

    /* Group 0's second stage is booked for seconds: "b" (SLO 1 s) cannot make it. */
    http_request(port, "POST", COMPLETIONS, NULL,
                 "{\"model\": \"b\", \"prompt\": \"Once\", \"max_tokens\": 2}", &r);
    expect_error(&r, 429, "model");
    assert_non_null(strstr(r.body, "slo_unattainable"));
    assert_non_null(strstr(r.body, "SLO of 1.000 s"));
    http_reply_free(&r);
    assert_true(metric(port, "pagoda_slo_rejected_requests_total{model_name=\"b\"} ") == 1.0);
    assert_true(metric(port, "pagoda_slo_rejected_requests_total{model_name=\"a\"} ") == 0.0);

    TEST_ASSERT_OK(pagoda_server_stop(server));
    pagoda_server_destroy(server);
}

/* With "reject_late": false the controller still routes but rejects nothing: "b", whose
 * group is booked past its SLO, is served (late), as a server without admission control would. */
static void test_serves_late_when_told(void **state) {
    (void)state;
    int port = 0;
    pagoda_server_t *server = start_server(&port);
    char *json = placement_json("2", ENGINE_STACK_MODEL, 1);
    char *serve_all = NULL;
    assert_true(asprintf(&serve_all, "{\"reject_late\": false, %s", json + 1) > 0);
    free(json);
    TEST_ASSERT_OK(pagoda_server_add_placement(server, serve_all, "cpu", NULL, NULL));
    free(serve_all);
    http_reply_t r;
    const char *body = "{\"model\": \"a\", \"prompt\": \"Once\", \"max_tokens\": 2}";
    for (int i = 0; i < 3; i++) {
        http_request(port, "POST", COMPLETIONS, NULL, body, &r);
        assert_int_equal(r.status, 200);
        http_reply_free(&r);
    }
    http_request(port, "POST", COMPLETIONS, NULL, "{\"model\": \"b\", \"prompt\": \"Once\", \"max_tokens\": 2}", &r);
    if (r.status != 200) fail_msg("b answered %d: %s", r.status, r.body);
    http_reply_free(&r);
    assert_true(metric(port, "pagoda_slo_rejected_requests_total{model_name=\"b\"} ") == 0.0);
    TEST_ASSERT_OK(pagoda_server_stop(server));
    pagoda_server_destroy(server);
}

/* Refused whole, naming the group and model; the server then serves nothing. */
static void expect_refused(const char *json, pagoda_status_t status, const char *group, const char *model) {
    int port = 0;
    pagoda_server_t *server = start_server(&port);
    test_expect_failure(pagoda_server_add_placement(server, json, NULL, NULL, NULL), status, group);
    assert_non_null(strstr(pagoda_last_error_message(), model));
    http_reply_t r;
    http_request(port, "GET", "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 503);
    http_reply_free(&r);
    TEST_ASSERT_OK(pagoda_server_stop(server));
    pagoda_server_destroy(server);
}

static void test_refusals(void **state) {
    (void)state;
    char *json = placement_json("9", ENGINE_STACK_MODEL, 1);
    expect_refused(json, PAGODA_ERR_NOT_FOUND, "placement group 1 (cpu:9)", "model 'a'");
    free(json);
    json = placement_json("2", ENGINE_STACK_MODEL, 0);
    expect_refused(json, PAGODA_ERR_INVALID_ARGUMENT, "placement group 0", "model 'b'");
    free(json);
    json = placement_json("2", "/no/such/model.gguf", 1);
    expect_refused(json, PAGODA_ERR_NOT_FOUND, "placement group 0", "/no/such/model.gguf");
    free(json);
    expect_refused("{\"models\": [{\"name\": \"a\"}], \"groups\": [{\"devices\": [0, 0], \"pipeline\": 2, "
                   "\"tensor\": 1, \"replicas\": []}]}",
                   PAGODA_ERR_INVALID_ARGUMENT, "groups[0]", "");

    /* A server that serves a model already takes no placement. */
    server_fixture_t f;
    server_fixture_start(&f, NULL);
    json = placement_json("2", ENGINE_STACK_MODEL, 1);
    test_expect_failure(pagoda_server_add_placement(f.server, json, NULL, NULL, NULL),
                        PAGODA_ERR_ALREADY_EXISTS, "no model yet");
    free(json);
    server_fixture_stop(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_and_rejects),
        cmocka_unit_test(test_serves_late_when_told),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
