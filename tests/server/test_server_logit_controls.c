/* The OpenAI server's logit controls and seeds on stories260K: logit_bias (token-id keys),
 * allowed_token_ids, bad_words (tokenized by the server), min_tokens against stop strings, a
 * fresh seed per request without `seed` and a repeat with one, and 400s naming the field and
 * the key at fault. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_fixture.h"

#define COMPLETIONS "/v1/completions"

static server_fixture_t *fx(void **state) { return (server_fixture_t *)*state; }

/* The completion's text for `body` (which must succeed); free() it. */
static char *complete(server_fixture_t *f, const char *body) {
    http_reply_t r;
    http_request(f->port, "POST", COMPLETIONS, NULL, body, &r);
    if (r.status != 200) fail_msg("%s answered %d: %s", body, r.status, r.body);
    char *text = completion_text(r.body);
    http_reply_free(&r);
    return text;
}

/* usage.completion_tokens of the answer to `body`. */
static long completion_tokens(server_fixture_t *f, const char *body) {
    http_reply_t r;
    http_request(f->port, "POST", COMPLETIONS, NULL, body, &r);
    if (r.status != 200) fail_msg("%s answered %d: %s", body, r.status, r.body);
    const char *at = strstr(r.body, "\"completion_tokens\":");
    assert_non_null(at);
    long n = strtol(at + strlen("\"completion_tokens\":"), NULL, 10);
    http_reply_free(&r);
    return n;
}

static void test_seeds(void **state) {
    server_fixture_t *f = fx(state);
    const char *unseeded =
        "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":1,\"ignore_eos\":true}";
    const char *seeded = "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":1,"
                         "\"ignore_eos\":true,\"seed\":5}";
    char *a = complete(f, unseeded), *b = complete(f, unseeded);
    assert_string_not_equal(a, b);
    char *c = complete(f, seeded), *d = complete(f, seeded);
    assert_string_equal(c, d);
    free(a);
    free(b);
    free(c);
    free(d);
}

static void test_bias_and_allowed_ids(void **state) {
    server_fixture_t *f = fx(state);
    char *biased = complete(f, "{\"prompt\":\"Once upon a time\",\"max_tokens\":6,"
                               "\"ignore_eos\":true,\"logit_bias\":{\"300\":100,\"1\":-100}}");
    char *allowed = complete(f, "{\"prompt\":\"Once upon a time\",\"max_tokens\":6,"
                                "\"ignore_eos\":true,\"allowed_token_ids\":[300]}");
    assert_true(strlen(biased) > 0);
    assert_string_equal(biased, allowed);
    free(biased);
    free(allowed);
}

static void test_bad_words(void **state) {
    server_fixture_t *f = fx(state);
    const char *greedy = "{\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0,"
                         "\"ignore_eos\":true}";
    char *plain = complete(f, greedy);
    /* Its first word becomes a bad word. */
    char word[64] = {0};
    const char *at = plain + strcspn(plain, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    sscanf(at, "%63[A-Za-z]", word);
    assert_true(strlen(word) > 0);
    char body[256];
    snprintf(body, sizeof body,
             "{\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0,"
             "\"ignore_eos\":true,\"bad_words\":[\"%s\"]}", word);
    char *banned = complete(f, body);
    assert_string_not_equal(plain, banned);
    free(plain);
    free(banned);
}

static void test_min_tokens_and_stop_strings(void **state) {
    server_fixture_t *f = fx(state);
    const long free_run = completion_tokens(
        f, "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,\"temperature\":0,\"stop\":\" \"}");
    assert_true(free_run < 10);
    const long held = completion_tokens(
        f, "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,\"temperature\":0,\"stop\":\" \","
           "\"min_tokens\":10}");
    assert_true(held >= 10);
}

static void test_errors(void **state) {
    server_fixture_t *f = fx(state);
    static const struct {
        const char *body;
        const char *param;
        const char *says; /* in the message */
    } cases[] = {
        {"{\"prompt\":\"x\",\"logit_bias\":[1]}", "logit_bias", "an object"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"abc\":1}}", "logit_bias", "'abc'"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"-1\":1}}", "logit_bias", "'-1'"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"512\":1}}", "logit_bias", "outside the vocabulary"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"5\":101}}", "logit_bias", "'5'"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"5\":\"up\"}}", "logit_bias", "a number"},
        {"{\"prompt\":\"x\",\"logit_bias\":{\"5\":1,\"05\":2}}", "logit_bias", "twice"},
        {"{\"prompt\":\"x\",\"allowed_token_ids\":[]}", "allowed_token_ids", "non-empty"},
        {"{\"prompt\":\"x\",\"allowed_token_ids\":[600]}", "allowed_token_ids", "600"},
        {"{\"prompt\":\"x\",\"bad_words\":\"x\"}", "bad_words", "array"},
        {"{\"prompt\":\"x\",\"bad_words\":[\" \"]}", "bad_words", "bad_words[0]"},
        {"{\"prompt\":\"x\",\"bad_words\":[\"a\",5]}", "bad_words", "bad_words[1]"},
        {"{\"prompt\":\"x\",\"min_tokens\":-1}", "min_tokens", "min_tokens"},
        {"{\"prompt\":\"x\",\"max_tokens\":4,\"min_tokens\":5}", "min_tokens", "max_tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_reply_t r;
        http_request(f->port, "POST", COMPLETIONS, NULL, cases[i].body, &r);
        expect_error(&r, 400, cases[i].param);
        if (strstr(r.body, cases[i].says) == NULL)
            fail_msg("%s: the error does not say \"%s\": %s", cases[i].body, cases[i].says, r.body);
        http_reply_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_seeds, server_fixture_setup, server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bias_and_allowed_ids, server_fixture_setup,
                                        server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_words, server_fixture_setup,
                                        server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_min_tokens_and_stop_strings, server_fixture_setup,
                                        server_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_errors, server_fixture_setup, server_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
