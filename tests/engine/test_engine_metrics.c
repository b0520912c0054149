/* The serving metrics (pagoda_engine_get_metrics) through the public API on stories260K: the
 * counts balance against what the outputs show (prompt and generated tokens, one time to first
 * token and one end-to-end latency per request, generated − 1 inter-token gaps), requests
 * finished by reason after length stops and aborts, prefix-cache tokens after a repeated
 * prompt, preemptions when blocks are scarce, KV usage back to 0, reads from another thread
 * while the engine steps, and the struct_size rules. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"
#include "test_util.h"

#define MAX_REQ 8

typedef struct tally {
    uint64_t id;
    size_t n_tokens;
    int32_t first_tokens[8];
    size_t n_prompt;
    pagoda_finish_reason_t reason;
    int finished;
} tally_t;

typedef struct run {
    engine_stack_t stack;
    tally_t req[MAX_REQ];
    size_t n_req;
} run_t;

static run_t *open_run(int64_t num_blocks, int32_t block_size, int32_t preemption) {
    run_t *r = test_xcalloc(1, sizeof *r);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = num_blocks;
    ko.block_size = block_size;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.preemption = preemption;
    engine_stack_open(&r->stack, &ko, &eo);
    return r;
}

static pagoda_engine_metrics_t metrics_of(const run_t *r) {
    pagoda_engine_metrics_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    TEST_ASSERT_OK(pagoda_engine_get_metrics(r->stack.engine, &m));
    assert_int_equal(m.struct_size, sizeof m);
    return m;
}

static tally_t *tally_of(run_t *r, uint64_t id) {
    for (size_t i = 0; i < r->n_req; i++)
        if (r->req[i].id == id) return &r->req[i];
    fail_msg("an output for request %llu, never submitted", (unsigned long long)id);
    return NULL;
}

static uint64_t submit_stop(run_t *r, const char *text, int32_t max_tokens, uint32_t flags,
                            const int32_t *stop_ids, size_t n_stop_ids) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = max_tokens;
    o.flags = flags;
    o.stop_token_ids = stop_ids;
    o.n_stop_token_ids = n_stop_ids;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(r->stack.engine, text, strlen(text), &o, &id));
    assert_true(r->n_req < MAX_REQ);
    r->req[r->n_req++].id = id;
    return id;
}

static uint64_t submit(run_t *r, const char *text, int32_t max_tokens, uint32_t flags) {
    return submit_stop(r, text, max_tokens, flags, NULL, 0);
}

static void drain(run_t *r) {
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    while (pagoda_engine_poll(r->stack.engine, &o) == PAGODA_OK) {
        tally_t *t = tally_of(r, o.request_id);
        assert_int_equal(t->finished, 0);
        for (size_t i = 0; i < o.n_tokens; i++)
            if (t->n_tokens + i < 8) t->first_tokens[t->n_tokens + i] = o.token_ids[i];
        t->n_tokens += o.n_tokens;
        t->n_prompt = o.n_prompt_tokens;
        if (o.request_finished) {
            t->finished = 1;
            t->reason = o.finish_reason;
        }
    }
}

static void step_until_done(run_t *r, int max_steps) {
    for (int steps = 0; pagoda_engine_has_work(r->stack.engine); steps++) {
        assert_true(steps < max_steps);
        TEST_ASSERT_OK(pagoda_engine_step(r->stack.engine));
        drain(r);
    }
    drain(r);
}

/* Every histogram: vLLM's bounds, ascending; cumulative counts that never fall or pass `count`. */
static void check_histogram(const pagoda_histogram_t *h, double first_bound, double last_bound) {
    assert_true(h->n_bounds > 0 && h->n_bounds <= PAGODA_HISTOGRAM_MAX_BOUNDS);
    assert_true(h->upper_bounds[0] == first_bound);
    assert_true(h->upper_bounds[h->n_bounds - 1] == last_bound);
    for (uint32_t i = 1; i < h->n_bounds; i++) {
        assert_true(h->upper_bounds[i] > h->upper_bounds[i - 1]);
        assert_true(h->cumulative_counts[i] >= h->cumulative_counts[i - 1]);
    }
    assert_true(h->cumulative_counts[h->n_bounds - 1] <= h->count);
    for (uint32_t i = h->n_bounds; i < PAGODA_HISTOGRAM_MAX_BOUNDS; i++) {
        assert_true(h->upper_bounds[i] == 0.0);
        assert_int_equal(h->cumulative_counts[i], 0);
    }
    assert_true(h->sum >= 0.0);
    if (h->count == 0) assert_true(h->sum == 0.0);
}

static void check_histograms(const pagoda_engine_metrics_t *m) {
    check_histogram(&m->time_to_first_token, 0.001, 2560.0);
    check_histogram(&m->inter_token_latency, 0.01, 80.0);
    check_histogram(&m->e2e_request_latency, 0.3, 7680.0);
    check_histogram(&m->request_queue_time, 0.3, 7680.0);
}

/* What every finished run shows: the counts equal what the outputs carried. */
static void check_balance(const run_t *r, const pagoda_engine_metrics_t *m, uint64_t with_tokens) {
    int64_t generated = 0, prompts = 0, stop = 0, length = 0, aborted = 0;
    for (size_t i = 0; i < r->n_req; i++) {
        const tally_t *t = &r->req[i];
        assert_true(t->finished);
        generated += (int64_t)t->n_tokens;
        if (t->n_tokens > 0) prompts += (int64_t)t->n_prompt;
        stop += t->reason == PAGODA_FINISH_STOP_TOKEN || t->reason == PAGODA_FINISH_STOP_STRING;
        length += t->reason == PAGODA_FINISH_LENGTH;
        aborted += t->reason == PAGODA_FINISH_ABORTED;
    }
    assert_int_equal(m->generation_tokens, generated);
    assert_int_equal(m->prompt_tokens, prompts);
    assert_int_equal(m->requests_finished_stop, stop);
    assert_int_equal(m->requests_finished_length, length);
    assert_int_equal(m->requests_finished_aborted, aborted);
    assert_int_equal(m->requests_finished_error, 0);
    assert_int_equal(m->e2e_request_latency.count, r->n_req);
    assert_int_equal(m->time_to_first_token.count, with_tokens);
    /* One gap per later step of each request: every request here has one sequence. */
    assert_int_equal(m->inter_token_latency.count, (uint64_t)generated - with_tokens);
    /* Idle: nothing running, every block back. */
    assert_int_equal(m->requests_running + m->requests_waiting + m->requests_swapped, 0);
    assert_int_equal(m->kv_blocks_used, 0);
    assert_true(m->kv_cache_usage == 0.0);
    check_histograms(m);
    assert_true(m->e2e_request_latency.sum >= m->time_to_first_token.sum);
}

static void close_run(run_t *r) {
    engine_stack_close(&r->stack);
    free(r);
}

static const char *const kPrompts[4] = {"Once upon a time", "The little dog", "Tom and Sue went",
                                        "A big red ball"};

/* Length stops and (greedy stories260K) some end-of-sequence stops; usage seen mid-run. */
static void test_counts_balance(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    pagoda_engine_metrics_t m = metrics_of(r);
    assert_int_equal(m.generation_tokens, 0);
    assert_int_equal(m.e2e_request_latency.count, 0);
    check_histograms(&m);
    const pagoda_kv_cache_stats_t ks = engine_stack_kv_stats(&r->stack);
    assert_int_equal(m.kv_blocks_total, ks.blocks_total);

    const int32_t max_tokens[4] = {1, 5, 40, 200};
    for (int i = 0; i < 4; i++) submit(r, kPrompts[i], max_tokens[i], 0);
    m = metrics_of(r);
    assert_int_equal(m.requests_waiting, 4);
    TEST_ASSERT_OK(pagoda_engine_step(r->stack.engine));
    drain(r);
    m = metrics_of(r);
    assert_int_equal(m.request_queue_time.count, 4);
    assert_int_equal(m.time_to_first_token.count, 4);
    assert_true(m.kv_blocks_used > 0 && m.kv_cache_usage > 0.0 && m.kv_cache_usage <= 1.0);
    assert_true(m.kv_cache_usage == (double)m.kv_blocks_used / (double)m.kv_blocks_total);
    assert_true(m.requests_running <= 3); /* the max_tokens = 1 request ended at once */
    assert_true(m.requests_finished_length >= 1);
    step_until_done(r, 500);

    m = metrics_of(r);
    check_balance(r, &m, 4);
    assert_int_equal(r->req[0].reason, PAGODA_FINISH_LENGTH);
    assert_int_equal(r->req[1].reason, PAGODA_FINISH_LENGTH);
    assert_true(m.requests_finished_length >= 2);
    printf("metrics: %lld prompt + %lld generated tokens; ttft mean %.4f s, itl mean %.5f s, "
           "finished stop %lld length %lld\n",
           (long long)m.prompt_tokens, (long long)m.generation_tokens,
           m.time_to_first_token.sum / (double)m.time_to_first_token.count,
           m.inter_token_latency.sum / (double)m.inter_token_latency.count,
           (long long)m.requests_finished_stop, (long long)m.requests_finished_length);
    close_run(r);
}

/* A stop token (the third greedy token of a first run) ends the second run: "stop". */
static void test_stop_reason(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    submit(r, kPrompts[0], 6, PAGODA_REQUEST_IGNORE_EOS);
    step_until_done(r, 100);
    const int32_t stop = r->req[0].first_tokens[2];
    size_t want = 0;
    while (r->req[0].first_tokens[want] != stop) want++;
    submit_stop(r, kPrompts[0], 6, PAGODA_REQUEST_IGNORE_EOS, &stop, 1);
    step_until_done(r, 100);
    assert_int_equal(r->req[1].reason, PAGODA_FINISH_STOP_TOKEN);
    assert_int_equal(r->req[1].n_tokens, want + 1); /* the stop token is an output token */
    pagoda_engine_metrics_t m = metrics_of(r);
    assert_int_equal(m.requests_finished_stop, 1);
    assert_int_equal(m.requests_finished_length, 1);
    check_balance(r, &m, 2);
    close_run(r);
}

/* One aborted while it waits (no token, no first-token time), one after its first step. */
static void test_aborts_counted(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    uint64_t waiting = submit(r, kPrompts[0], 50, PAGODA_REQUEST_IGNORE_EOS);
    uint64_t running = submit(r, kPrompts[1], 50, PAGODA_REQUEST_IGNORE_EOS);
    submit(r, kPrompts[2], 8, PAGODA_REQUEST_IGNORE_EOS);
    TEST_ASSERT_OK(pagoda_engine_abort(r->stack.engine, waiting));
    TEST_ASSERT_OK(pagoda_engine_step(r->stack.engine));
    TEST_ASSERT_OK(pagoda_engine_step(r->stack.engine));
    TEST_ASSERT_OK(pagoda_engine_abort(r->stack.engine, running));
    drain(r);
    step_until_done(r, 100);

    pagoda_engine_metrics_t m = metrics_of(r);
    check_balance(r, &m, 2);
    assert_int_equal(m.requests_finished_aborted, 2);
    assert_int_equal(m.requests_finished_length, 1);
    assert_int_equal(m.request_queue_time.count, 2);
    assert_int_equal(tally_of(r, running)->n_tokens, 2);
    close_run(r);
}

/* n = 2: both sequences' tokens are generated tokens; the latencies are the request's, one
 * observation per step. */
static void test_parallel_sampling(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.n = 2;
    o.max_tokens = 5;
    o.seed = 3;
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(r->stack.engine, kPrompts[1], strlen(kPrompts[1]), &o, &id));
    r->req[r->n_req++].id = id;
    step_until_done(r, 100);
    pagoda_engine_metrics_t m = metrics_of(r);
    assert_int_equal(r->req[0].n_tokens, 10);
    assert_int_equal(m.generation_tokens, 10);
    assert_int_equal(m.prompt_tokens, (int64_t)r->req[0].n_prompt);
    assert_int_equal(m.time_to_first_token.count, 1);
    assert_int_equal(m.inter_token_latency.count, 4);
    assert_int_equal(m.e2e_request_latency.count, 1);
    assert_int_equal(m.requests_finished_length, 1);
    check_histograms(&m);
    close_run(r);
}

static const char *const kLongPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends and her dog.";

/* The same prompt twice: the second finds every full block of its prompt but the last token's. */
static void test_prefix_cache_tokens(void **state) {
    (void)state;
    const int32_t block_size = 8;
    run_t *r = open_run(256, block_size, PAGODA_PREEMPT_AUTO);
    submit(r, kLongPrompt, 4, 0);
    step_until_done(r, 100);
    pagoda_engine_metrics_t m = metrics_of(r);
    const int64_t n_prompt = (int64_t)r->req[0].n_prompt;
    assert_true(n_prompt > 2 * block_size);
    assert_int_equal(m.prefix_cache_queries, n_prompt);
    assert_int_equal(m.prefix_cache_hits, 0);

    submit(r, kLongPrompt, 4, 0);
    step_until_done(r, 100);
    m = metrics_of(r);
    assert_int_equal(m.prefix_cache_queries, 2 * n_prompt);
    assert_int_equal(m.prefix_cache_hits, (n_prompt - 1) / block_size * block_size);
    /* Whole prompts count in prompt_tokens; the cached part is not computed again. */
    assert_int_equal(m.prompt_tokens, 2 * n_prompt);
    assert_int_equal(m.prompt_tokens_computed, 2 * n_prompt - m.prefix_cache_hits);
    check_balance(r, &m, 2);
    close_run(r);
}

static const char *const kSix[6] = {"Once upon a time", "The little dog", "Tom and Sue went",
                                    "A big red ball", "One day, a bird", "Lily was sad"};

/* 12 blocks of 4 tokens cannot hold 6 growing sequences: preemptions, counted; the balance
 * holds (a recomputed prompt counts once). */
static void run_scarce(int32_t preemption) {
    run_t *r = open_run(12, 4, preemption);
    for (int i = 0; i < 6; i++) submit(r, kSix[i], 24, PAGODA_REQUEST_IGNORE_EOS);
    int64_t swapped_seen = 0;
    for (int steps = 0; pagoda_engine_has_work(r->stack.engine); steps++) {
        assert_true(steps < 2000);
        TEST_ASSERT_OK(pagoda_engine_step(r->stack.engine));
        drain(r);
        pagoda_engine_metrics_t m = metrics_of(r);
        if (m.requests_swapped > swapped_seen) swapped_seen = m.requests_swapped;
        assert_true(m.kv_blocks_used <= 12);
    }
    drain(r);
    pagoda_engine_metrics_t m = metrics_of(r);
    const pagoda_engine_stats_t es = engine_stack_engine_stats(&r->stack);
    assert_int_equal(m.preemptions_recompute, es.preemptions_recompute);
    assert_int_equal(m.preemptions_swap, es.preemptions_swap);
    if (preemption == PAGODA_PREEMPT_SWAP) {
        assert_true(m.preemptions_swap > 0);
        assert_true(swapped_seen > 0);
    } else {
        assert_true(m.preemptions_recompute > 0);
        assert_int_equal(m.preemptions_swap, 0);
    }
    check_balance(r, &m, 6);
    assert_int_equal(m.requests_finished_length, 6);
    close_run(r);
}

static void test_preemptions_recompute(void **state) {
    (void)state;
    run_scarce(PAGODA_PREEMPT_RECOMPUTE);
}

static void test_preemptions_swap(void **state) {
    (void)state;
    run_scarce(PAGODA_PREEMPT_SWAP);
}

/* Another thread reads while the engine steps: counters never fall, histograms agree. */
typedef struct reader {
    pagoda_engine_t *engine;
    volatile int stop;
    int64_t reads;
    int failures;
} reader_t;

static void *read_metrics(void *arg) {
    reader_t *rd = arg;
    int64_t last_generated = 0;
    uint64_t last_ttft = 0;
    do {
        pagoda_engine_metrics_t m;
        memset(&m, 0, sizeof m);
        m.struct_size = sizeof m;
        if (pagoda_engine_get_metrics(rd->engine, &m) != PAGODA_OK) rd->failures++;
        if (m.generation_tokens < last_generated || m.time_to_first_token.count < last_ttft) rd->failures++;
        if (m.time_to_first_token.n_bounds == 0 ||
            m.time_to_first_token.cumulative_counts[m.time_to_first_token.n_bounds - 1] >
                m.time_to_first_token.count)
            rd->failures++;
        last_generated = m.generation_tokens;
        last_ttft = m.time_to_first_token.count;
        rd->reads++;
    } while (!rd->stop);
    return NULL;
}

static void test_read_while_stepping(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    reader_t rd = {r->stack.engine, 0, 0, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, read_metrics, &rd), 0);
    for (int i = 0; i < 4; i++) submit(r, kPrompts[i], 30, 0);
    step_until_done(r, 500);
    rd.stop = 1;
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(rd.failures, 0);
    assert_true(rd.reads > 0);
    pagoda_engine_metrics_t m = metrics_of(r);
    check_balance(r, &m, 4);
    close_run(r);
}

/* struct_size: too small fails; an older, shorter struct is filled no further than its end. */
static void test_struct_size(void **state) {
    (void)state;
    run_t *r = open_run(0, 0, PAGODA_PREEMPT_AUTO);
    submit(r, kPrompts[0], 3, PAGODA_REQUEST_IGNORE_EOS);
    step_until_done(r, 50);

    test_expect_failure(pagoda_engine_get_metrics(r->stack.engine, NULL), PAGODA_ERR_INVALID_ARGUMENT,
                        "metrics");
    pagoda_engine_metrics_t m;
    memset(&m, 0, sizeof m);
    test_expect_failure(pagoda_engine_get_metrics(r->stack.engine, &m), PAGODA_ERR_INVALID_ARGUMENT,
                        "struct_size");
    m.struct_size = sizeof m;
    assert_int_equal(pagoda_engine_get_metrics(NULL, &m), PAGODA_ERR_INVALID_HANDLE);

    memset(&m, 0xAB, sizeof m);
    m.struct_size = (uint32_t)offsetof(pagoda_engine_metrics_t, time_to_first_token);
    TEST_ASSERT_OK(pagoda_engine_get_metrics(r->stack.engine, &m));
    assert_int_equal(m.struct_size, offsetof(pagoda_engine_metrics_t, time_to_first_token));
    assert_int_equal(m.generation_tokens, 3);
    assert_int_equal(m.requests_finished_length, 1);
    const unsigned char *tail = (const unsigned char *)&m.time_to_first_token;
    for (size_t i = 0; i < sizeof m.time_to_first_token; i++) assert_int_equal(tail[i], 0xAB);
    close_run(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_balance),
        cmocka_unit_test(test_stop_reason),
        cmocka_unit_test(test_aborts_counted),
        cmocka_unit_test(test_parallel_sampling),
        cmocka_unit_test(test_prefix_cache_tokens),
        cmocka_unit_test(test_preemptions_recompute),
        cmocka_unit_test(test_preemptions_swap),
        cmocka_unit_test(test_read_while_stepping),
        cmocka_unit_test(test_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
