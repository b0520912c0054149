/* pagoda_engine_poll_batch and pagoda_engine_step_poll: the outputs pagoda_engine_poll() hands
 * out one call at a time, in one call (with the step, for the second); entries at the caller's
 * stride (an older host's smaller struct); their refusals. */
#include <stddef.h>
#include <string.h>

#include "engine_stack.h"

enum { kRequests = 5, kTokens = 12 };

static void submit_requests(pagoda_engine_t *engine) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = kTokens;
    o.flags |= PAGODA_REQUEST_IGNORE_EOS;
    const char *prompts[kRequests] = {"Once upon a time", "The cat", "Lily and Tom", "One day",
                                      "A big dog"};
    for (int i = 0; i < kRequests; ++i) {
        uint64_t id = 0;
        TEST_ASSERT_OK(pagoda_engine_submit_text(engine, prompts[i], strlen(prompts[i]), &o, &id));
    }
}

/* What one output said, kept past the next poll. */
typedef struct seen {
    uint64_t request_id;
    int32_t token;
    char text[64];
    int32_t finished;
} seen_t;

static seen_t keep(const pagoda_output_t *out) {
    assert_int_equal(out->n_tokens, 1);
    seen_t s = {out->request_id, out->token_ids[0], {0}, out->request_finished};
    assert_true(out->text_len < sizeof s.text);
    memcpy(s.text, out->text, out->text_len);
    return s;
}

/* Steps to the end, reading every step's outputs with single polls; returns how many. */
static size_t run_polling_singly(pagoda_engine_t *engine, seen_t *seen) {
    size_t n = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) seen[n++] = keep(&out);
    }
    return n;
}

/* The same with batches of `capacity` entries `stride` bytes apart. */
static size_t run_polling_batches(pagoda_engine_t *engine, seen_t *seen, size_t capacity,
                                  uint32_t stride) {
    _Alignas(pagoda_output_t) unsigned char storage[9 * sizeof(pagoda_output_t)];
    assert_true(capacity * stride <= sizeof storage);
    size_t n = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        for (size_t got = capacity; got == capacity;) {
            memset(storage, 0xAB, sizeof storage);
            ((pagoda_output_t *)storage)->struct_size = stride;
            TEST_ASSERT_OK(pagoda_engine_poll_batch(engine, (pagoda_output_t *)storage, capacity,
                                                    &got));
            assert_true(got <= capacity);
            for (size_t i = 0; i < got; ++i) {
                const pagoda_output_t *out = (const pagoda_output_t *)(storage + i * stride);
                assert_int_equal(out->struct_size, stride);
                seen[n++] = keep(out);
                /* A newer host's own fields, past the library's struct, are left alone. */
                for (size_t b = sizeof(pagoda_output_t); b < stride; ++b)
                    assert_int_equal(storage[i * stride + b], 0xAB);
            }
            /* Nothing written past the entries filled (an older host's array ends there). */
            for (size_t b = got * stride; b < sizeof storage; ++b) assert_int_equal(storage[b], 0xAB);
        }
    }
    return n;
}

/* Steps to the end with pagoda_engine_step_poll and batches of `capacity`: what the batch
 * leaves queued comes first in the next step's. */
static size_t run_step_polls(pagoda_engine_t *engine, seen_t *seen, size_t capacity) {
    pagoda_output_t outs[8];
    assert_true(capacity <= 8);
    size_t n = 0;
    while (pagoda_engine_has_work(engine)) {
        memset(outs, 0, sizeof outs);
        outs[0].struct_size = sizeof outs[0];
        size_t got = 0;
        TEST_ASSERT_OK(pagoda_engine_step_poll(engine, outs, capacity, &got));
        assert_true(got <= capacity);
        for (size_t i = 0; i < got; ++i) seen[n++] = keep(&outs[i]);
    }
    /* The rest, left queued by the last steps. */
    for (size_t got = capacity; got == capacity;) {
        TEST_ASSERT_OK(pagoda_engine_poll_batch(engine, outs, capacity, &got));
        for (size_t i = 0; i < got; ++i) seen[n++] = keep(&outs[i]);
    }
    return n;
}

static void assert_same_outputs(const seen_t *a, const seen_t *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        assert_int_equal(a[i].request_id, b[i].request_id);
        assert_int_equal(a[i].token, b[i].token);
        assert_string_equal(a[i].text, b[i].text);
        assert_int_equal(a[i].finished, b[i].finished);
    }
}

/* Batches smaller than a step's outputs (3 of 5), and larger (8), give what single polls give,
 * in the same order. */
static void test_batches_give_what_single_polls_give(void **state) {
    (void)state;
    seen_t singly[kRequests * kTokens], batched[kRequests * kTokens];
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    submit_requests(s.engine);
    assert_int_equal(run_polling_singly(s.engine, singly), kRequests * kTokens);
    engine_stack_close(&s);
    const size_t capacities[] = {3, 8};
    for (size_t c = 0; c < 2; ++c) {
        engine_stack_open(&s, NULL, NULL);
        submit_requests(s.engine);
        memset(batched, 0, sizeof batched);
        assert_int_equal(run_polling_batches(s.engine, batched, capacities[c], sizeof(pagoda_output_t)),
                         kRequests * kTokens);
        assert_same_outputs(singly, batched, kRequests * kTokens);
        engine_stack_close(&s);
    }
}

/* Step-and-poll gives what a step and single polls give, with room for a whole step's outputs
 * (8) and without (2: the rest waits, in order, for the next call). */
static void test_step_poll_gives_what_step_and_poll_give(void **state) {
    (void)state;
    seen_t singly[kRequests * kTokens], stepped[kRequests * kTokens];
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    submit_requests(s.engine);
    assert_int_equal(run_polling_singly(s.engine, singly), kRequests * kTokens);
    engine_stack_close(&s);
    const size_t capacities[] = {2, 8};
    for (size_t c = 0; c < 2; ++c) {
        engine_stack_open(&s, NULL, NULL);
        submit_requests(s.engine);
        memset(stepped, 0, sizeof stepped);
        assert_int_equal(run_step_polls(s.engine, stepped, capacities[c]), kRequests * kTokens);
        assert_same_outputs(singly, stepped, kRequests * kTokens);
        engine_stack_close(&s);
    }
}

/* A host built against a header whose pagoda_output_t ended before `n_prompt_tokens` gets its
 * entries at its own, smaller stride; one built against a newer, larger one at its larger one. */
static void test_an_older_hosts_stride(void **state) {
    (void)state;
    const uint32_t old_size = (uint32_t)offsetof(pagoda_output_t, n_prompt_tokens);
    assert_int_equal(old_size % 8, 0);
    seen_t singly[kRequests * kTokens], batched[kRequests * kTokens];
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    submit_requests(s.engine);
    run_polling_singly(s.engine, singly);
    engine_stack_close(&s);
    engine_stack_open(&s, NULL, NULL);
    submit_requests(s.engine);
    /* keep() reads request_finished, past the old struct: clear it from the comparison. */
    size_t n = run_polling_batches(s.engine, batched, 4, old_size);
    assert_int_equal(n, kRequests * kTokens);
    for (size_t i = 0; i < n; ++i) batched[i].finished = singly[i].finished;
    assert_same_outputs(singly, batched, n);
    engine_stack_close(&s);

    /* A host built against a newer header (8 more bytes) gets its stride too, and its own
     * fields left as it set them (run_polling_batches checks the bytes past the entries). */
    engine_stack_open(&s, NULL, NULL);
    submit_requests(s.engine);
    assert_int_equal(run_polling_batches(s.engine, batched, 4, (uint32_t)sizeof(pagoda_output_t) + 8),
                     kRequests * kTokens);
    assert_same_outputs(singly, batched, kRequests * kTokens);
    engine_stack_close(&s);
}

static void test_refusals(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_output_t outs[2];
    memset(outs, 0, sizeof outs);
    outs[0].struct_size = sizeof outs[0];
    size_t n = 99;
    TEST_ASSERT_OK(pagoda_engine_poll_batch(s.engine, outs, 2, &n));
    assert_int_equal(n, 0); /* nothing queued: OK, none taken */

    n = 99;
    assert_int_equal(pagoda_engine_poll_batch(NULL, outs, 2, &n), PAGODA_ERR_INVALID_HANDLE);
    assert_int_equal(pagoda_engine_poll_batch(s.engine, outs, 2, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    n = 99;
    assert_int_equal(pagoda_engine_poll_batch(s.engine, NULL, 2, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(n, 0);
    assert_int_equal(pagoda_engine_poll_batch(s.engine, outs, 0, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "capacity"));
    outs[0].struct_size = 0;
    assert_int_equal(pagoda_engine_poll_batch(s.engine, outs, 2, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "struct_size"));
    outs[0].struct_size = 12; /* entries 12 bytes apart would be misaligned */
    assert_int_equal(pagoda_engine_poll_batch(s.engine, outs, 2, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "misaligned"));

    /* Step-and-poll checks its arguments before it steps: a refused call has not stepped. */
    submit_requests(s.engine);
    assert_int_equal(pagoda_engine_step_poll(s.engine, outs, 2, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_engine_step_poll(s.engine, NULL, 2, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_engine_step_poll(s.engine, outs, 0, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_engine_step_poll(s.engine, outs, 2, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_engine_step_poll(NULL, outs, 2, &n), PAGODA_ERR_INVALID_HANDLE);
    assert_int_equal(engine_stack_engine_stats(&s).steps, 0);
    outs[0].struct_size = sizeof outs[0];
    while (pagoda_engine_has_work(s.engine)) TEST_ASSERT_OK(pagoda_engine_step_poll(s.engine, outs, 2, &n));
    do TEST_ASSERT_OK(pagoda_engine_poll_batch(s.engine, outs, 2, &n));
    while (n > 0);
    engine_stack_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_give_what_single_polls_give),
        cmocka_unit_test(test_step_poll_gives_what_step_and_poll_give),
        cmocka_unit_test(test_an_older_hosts_stride),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
