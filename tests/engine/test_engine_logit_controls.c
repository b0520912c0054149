/* The logit controls through the public API on stories260K: logit_bias that forces a token,
 * allowed_token_ids, bad_words, min_tokens against end-of-sequence, a host's logits processor
 * (what it is told, what it may do, how it stops a request), fresh seeds against fixed ones,
 * the host sampler taking over from the device's, and bad options refused at submit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"
#include "test_util.h"

#define MAX_TOK 256
#define VOCAB 512 /* stories260K's */

static const char *const kPrompt = "Once upon a time, there was a little girl named Lily.";

typedef struct run_result {
    int32_t tokens[MAX_TOK];
    float logprobs[MAX_TOK];
    size_t n_tokens;
    pagoda_finish_reason_t finish;
    pagoda_status_t status;
    char error[512];
} run_result_t;

static pagoda_request_options_t options(int32_t max_tokens, float temperature) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = max_tokens;
    o.temperature = temperature;
    o.logprobs = 0;
    return o;
}

/* Submits one request and steps the engine until its last output. */
static run_result_t run(pagoda_engine_t *engine, const pagoda_request_options_t *o) {
    run_result_t r;
    memset(&r, 0, sizeof r);
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(engine, kPrompt, strlen(kPrompt), o, &id));
    for (int steps = 0; steps < 1000; steps++) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            assert_int_equal(out.request_id, id);
            for (size_t i = 0; i < out.n_tokens && r.n_tokens < MAX_TOK; i++) {
                r.logprobs[r.n_tokens] = out.logprobs != NULL ? out.logprobs[i] : 0.0f;
                r.tokens[r.n_tokens++] = out.token_ids[i];
            }
            if (out.request_finished) {
                r.finish = (pagoda_finish_reason_t)out.finish_reason;
                r.status = (pagoda_status_t)out.status;
                snprintf(r.error, sizeof r.error, "%s", out.error);
                return r;
            }
        }
    }
    fail_msg("the request did not finish in 1000 steps");
    return r;
}

static int same_tokens(const run_result_t *a, const run_result_t *b) {
    return a->n_tokens == b->n_tokens &&
           memcmp(a->tokens, b->tokens, a->n_tokens * sizeof(int32_t)) == 0;
}

static void test_bias_forces_a_token(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(12, 1.0f);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    const pagoda_logit_bias_t bias[] = {{300, 100.0f}, {1, -100.0f}};
    o.logit_bias = bias;
    o.n_logit_bias = 2;
    const run_result_t r = run(s.engine, &o);
    assert_int_equal(r.finish, PAGODA_FINISH_LENGTH);
    assert_int_equal(r.n_tokens, 12);
    for (size_t i = 0; i < r.n_tokens; i++) assert_int_equal(r.tokens[i], 300);
    /* The log-probabilities are the model's: a +100 bias would make them ~0. */
    int some_unlikely = 0;
    for (size_t i = 0; i < r.n_tokens; i++) some_unlikely |= r.logprobs[i] < -0.5f;
    assert_true(some_unlikely);
    engine_stack_close(&s);
}

static void test_allowed_ids_and_bad_words(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(24, 1.0f);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    const int32_t allowed[] = {100, 200, 201, 350};
    o.allowed_token_ids = allowed;
    o.n_allowed_token_ids = 4;
    o.seed = 3;
    run_result_t r = run(s.engine, &o);
    assert_int_equal(r.n_tokens, 24);
    for (size_t i = 0; i < r.n_tokens; i++)
        assert_true(r.tokens[i] == 100 || r.tokens[i] == 200 || r.tokens[i] == 201 ||
                    r.tokens[i] == 350);

    /* Greedy, then greedy with its first token a bad word and its 2nd-3rd a two-token word. */
    pagoda_request_options_t g = options(8, 0.0f);
    g.flags = PAGODA_REQUEST_IGNORE_EOS;
    const run_result_t greedy = run(s.engine, &g);
    const int32_t bad_ids[] = {greedy.tokens[0], greedy.tokens[1], greedy.tokens[2]};
    const size_t one[] = {1};
    g.bad_words_token_ids = bad_ids;
    g.bad_words_lengths = one;
    g.n_bad_words = 1;
    r = run(s.engine, &g);
    assert_int_not_equal(r.tokens[0], greedy.tokens[0]);
    /* The two-token word: the first token may come, the second not right after it. */
    const size_t two[] = {2};
    g.bad_words_token_ids = bad_ids + 1;
    g.bad_words_lengths = two;
    r = run(s.engine, &g);
    assert_int_equal(r.tokens[0], greedy.tokens[0]);
    assert_int_equal(r.tokens[1], greedy.tokens[1]);
    assert_int_not_equal(r.tokens[2], greedy.tokens[2]);
    engine_stack_close(&s);
}

static void test_min_tokens_holds_eos_back(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(MAX_TOK - 16, 0.0f);
    const run_result_t free_run = run(s.engine, &o);
    if (free_run.finish != PAGODA_FINISH_STOP_TOKEN || free_run.n_tokens + 5 > MAX_TOK - 16) {
        engine_stack_close(&s);
        skip(); /* greedy never ended: nothing to hold back */
    }
    o.min_tokens = (int32_t)free_run.n_tokens + 5;
    const run_result_t held = run(s.engine, &o);
    assert_true(held.n_tokens >= (size_t)o.min_tokens);
    /* Up to where the end-of-sequence token came, the greedy run is the same. */
    assert_memory_equal(held.tokens, free_run.tokens, (free_run.n_tokens - 1) * sizeof(int32_t));
    const size_t eos_at = free_run.n_tokens - 1;
    assert_int_not_equal(held.tokens[eos_at], free_run.tokens[eos_at]);
    engine_stack_close(&s);
}

/* What the processor saw, and what it does: bans `banned`, and returns `stop_code` from its
 * `stop_after`-th call on. */
typedef struct processor_state {
    int calls;
    uint64_t request_id;
    int32_t banned;
    int stop_after;
    int32_t stop_code;
    size_t last_n_tokens;
    size_t n_prompt;
    int bad_call; /* a call whose arguments were wrong */
} processor_state_t;

static int32_t processor(void *user, uint64_t request_id, int32_t sequence_index,
                         const int32_t *token_ids, size_t n_tokens, size_t n_prompt_tokens,
                         float *logits, size_t n_logits) {
    processor_state_t *p = user;
    p->calls++;
    if (n_logits != VOCAB || sequence_index != 0 || token_ids == NULL ||
        (p->request_id != 0 && request_id != p->request_id) ||
        (p->last_n_tokens != 0 && n_tokens != p->last_n_tokens + 1))
        p->bad_call = 1;
    p->request_id = request_id;
    p->last_n_tokens = n_tokens;
    p->n_prompt = n_prompt_tokens;
    logits[p->banned] = -INFINITY;
    return p->stop_after > 0 && p->calls >= p->stop_after ? p->stop_code : 0;
}

static void test_logits_processor(void **state) {
    (void)state;
    engine_stack_t s;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.device_sampling = PAGODA_DEVICE_SAMPLING_ON; /* the processor takes the host sampler */
    engine_stack_open(&s, NULL, &eo);
    pagoda_request_options_t g = options(10, 0.0f);
    g.flags = PAGODA_REQUEST_IGNORE_EOS;
    const run_result_t greedy = run(s.engine, &g);
    const pagoda_engine_stats_t before = engine_stack_engine_stats(&s);

    processor_state_t p;
    memset(&p, 0, sizeof p);
    p.banned = greedy.tokens[0];
    g.logits_processor = processor;
    g.logits_processor_user = &p;
    const run_result_t r = run(s.engine, &g);
    assert_int_equal(r.finish, PAGODA_FINISH_LENGTH);
    assert_int_equal(p.calls, 10);
    assert_false(p.bad_call);
    assert_int_equal(p.last_n_tokens, p.n_prompt + 9);
    for (size_t i = 0; i < r.n_tokens; i++) assert_int_not_equal(r.tokens[i], p.banned);
    const pagoda_engine_stats_t after = engine_stack_engine_stats(&s);
    assert_int_equal(after.device_sampled_tokens, before.device_sampled_tokens);

    /* A nonzero return ends the request with an error that says so. */
    memset(&p, 0, sizeof p);
    p.banned = 0;
    p.stop_after = 3;
    p.stop_code = 42;
    const run_result_t stopped = run(s.engine, &g);
    assert_int_equal(stopped.finish, PAGODA_FINISH_ERROR);
    assert_int_equal(stopped.status, PAGODA_ERR_CANCELLED);
    assert_non_null(strstr(stopped.error, "returned 42"));
    assert_int_equal(stopped.n_tokens, 2);
    engine_stack_close(&s);
}

static void test_seeds(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(40, 1.0f);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    /* The defaults (seed 0, no flag) repeat, as an explicit seed does. */
    const run_result_t a = run(s.engine, &o), b = run(s.engine, &o);
    assert_true(same_tokens(&a, &b));
    o.seed = 1234;
    const run_result_t c = run(s.engine, &o), d = run(s.engine, &o);
    assert_true(same_tokens(&c, &d));
    /* Fresh seeds: 40 tokens at temperature 1 agree by chance with negligible probability. */
    o.flags |= PAGODA_REQUEST_FRESH_SEED;
    const run_result_t e = run(s.engine, &o), f = run(s.engine, &o);
    assert_false(same_tokens(&e, &f));
    assert_false(same_tokens(&e, &c));
    engine_stack_close(&s);
}

static void expect_refused(pagoda_engine_t *engine, const pagoda_request_options_t *o,
                           const char *needle) {
    uint64_t id = 0;
    assert_int_equal(pagoda_engine_submit_text(engine, kPrompt, strlen(kPrompt), o, &id),
                     PAGODA_ERR_INVALID_ARGUMENT);
    if (strstr(pagoda_last_error_message(), needle) == NULL)
        fail_msg("\"%s\" does not mention \"%s\"", pagoda_last_error_message(), needle);
}

static void test_bad_options(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(8, 1.0f);
    const pagoda_logit_bias_t outside[] = {{VOCAB, 1.0f}};
    o.logit_bias = outside;
    o.n_logit_bias = 1;
    expect_refused(s.engine, &o, "outside the vocabulary");
    const pagoda_logit_bias_t too_big[] = {{3, 101.0f}};
    o.logit_bias = too_big;
    expect_refused(s.engine, &o, "[-100, 100]");
    o.logit_bias = NULL;
    expect_refused(s.engine, &o, "logit_bias is NULL");
    o = options(8, 1.0f);
    o.min_tokens = 9;
    expect_refused(s.engine, &o, "min_tokens");
    o = options(8, 1.0f);
    o.n_allowed_token_ids = 2;
    expect_refused(s.engine, &o, "allowed_token_ids is NULL");
    const size_t zero[] = {0};
    const int32_t word[] = {5};
    o = options(8, 1.0f);
    o.bad_words_token_ids = word;
    o.bad_words_lengths = zero;
    o.n_bad_words = 1;
    expect_refused(s.engine, &o, "bad_words_lengths[0] is 0");
    o = options(8, 1.0f);
    o.beam_width = 2;
    o.min_tokens = 1;
    expect_refused(s.engine, &o, "beam search");
    engine_stack_close(&s);
}

/* A host built before the controls passes a shorter struct: none of them apply. */
static void test_old_struct_size(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = options(8, 0.0f);
    const run_result_t plain = run(s.engine, &o);
    const pagoda_logit_bias_t bias[] = {{300, 100.0f}};
    o.logit_bias = bias;
    o.n_logit_bias = 1;
    o.struct_size = 112; /* up to `priority` */
    const run_result_t old = run(s.engine, &o);
    assert_true(same_tokens(&plain, &old));
    engine_stack_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_forces_a_token),
        cmocka_unit_test(test_allowed_ids_and_bad_words),
        cmocka_unit_test(test_min_tokens_holds_eos_back),
        cmocka_unit_test(test_logits_processor),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_old_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
