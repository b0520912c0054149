/* The serving features through the public API on stories260K: prefix caching (same greedy
 * text, fewer prompt tokens computed), preemption by swap, contiguous reservation, priorities,
 * abort while swapped, the engine's and the cache's statistics, and the output fields
 * cumulative_logprob / request_finished. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"
#include "test_util.h"

#define MAX_REQ 16
#define MAX_TOK 128

typedef struct gathered {
    uint64_t id;
    int32_t tokens[MAX_TOK];
    float logprob_sum;
    size_t n_tokens;
    int finished;    /* request_finished seen */
    float cumulative; /* the last output's cumulative_logprob */
    size_t order;    /* when it finished */
} gathered_t;

typedef struct serving {
    engine_stack_t stack;
    gathered_t results[MAX_REQ];
    size_t n_results, n_finished;
} serving_t;

static serving_t *open_serving(int64_t num_blocks, int32_t block_size, int prefix_caching,
                               int32_t preemption, int32_t reservation, int32_t max_num_seqs) {
    serving_t *s = test_xcalloc(1, sizeof *s);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    assert_int_equal(ko.prefix_caching, 1);
    ko.num_blocks = num_blocks;
    ko.block_size = block_size;
    ko.prefix_caching = prefix_caching;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.preemption = preemption;
    eo.kv_reservation = reservation;
    if (max_num_seqs > 0) eo.max_num_seqs = max_num_seqs;
    engine_stack_open(&s->stack, &ko, &eo);
    return s;
}

static pagoda_kv_cache_stats_t kv_stats(const serving_t *s) {
    pagoda_kv_cache_stats_t st = engine_stack_kv_stats(&s->stack);
    assert_int_equal(st.blocks_free, st.blocks_total - st.blocks_used - st.blocks_cached);
    assert_int_equal(st.slots_wasted, st.blocks_used * st.block_size - st.slots_used);
    return st;
}

static pagoda_engine_stats_t engine_stats(const serving_t *s) {
    return engine_stack_engine_stats(&s->stack);
}

static void close_serving(serving_t *s) {
    kv_stats(s); /* its accounting checks, once more */
    engine_stack_close(&s->stack);
    free(s);
}

static gathered_t *result_of(serving_t *s, uint64_t id) {
    for (size_t i = 0; i < s->n_results; i++)
        if (s->results[i].id == id) return &s->results[i];
    assert_true(s->n_results < MAX_REQ);
    gathered_t *g = &s->results[s->n_results++];
    g->id = id;
    return g;
}

static void drain(serving_t *s) {
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    while (pagoda_engine_poll(s->stack.engine, &o) == PAGODA_OK) {
        gathered_t *g = result_of(s, o.request_id);
        assert_int_equal(g->finished, 0);
        assert_int_equal(o.sequence_index, 0);
        for (size_t i = 0; i < o.n_tokens; i++) {
            assert_true(g->n_tokens < MAX_TOK);
            g->tokens[g->n_tokens++] = o.token_ids[i];
            if (o.logprobs) g->logprob_sum += o.logprobs[i];
        }
        g->cumulative = o.cumulative_logprob;
        assert_int_equal(o.request_finished, o.finish_reason != PAGODA_FINISH_NONE);
        if (o.request_finished) {
            g->finished = 1;
            g->order = s->n_finished++;
        }
    }
}

static void step_until_done(serving_t *s, int max_steps) {
    for (int steps = 0; pagoda_engine_has_work(s->stack.engine); steps++) {
        assert_true(steps < max_steps);
        TEST_ASSERT_OK(pagoda_engine_step(s->stack.engine));
        drain(s);
    }
    drain(s);
}

static pagoda_request_options_t greedy(int32_t max_tokens) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = max_tokens;
    o.logprobs = 0;
    return o;
}

static uint64_t submit(serving_t *s, const char *text, const pagoda_request_options_t *o) {
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(s->stack.engine, text, strlen(text), o, &id));
    return id;
}

static const char *const kPrefix =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends and her dog. ";
static const char *const kSuffixes[4] = {"One day, she saw", "Her mom said", "The sun was",
                                         "They found a"};

/* Requests sharing a long prefix: the second and later take its blocks from the cache. */
static void run_shared_prefix(int prefix_caching, gathered_t out[4], pagoda_engine_stats_t *es,
                              pagoda_kv_cache_stats_t *ks) {
    serving_t *s = open_serving(256, 8, prefix_caching, PAGODA_PREEMPT_AUTO, PAGODA_KV_PAGED, 0);
    char text[512];
    uint64_t ids[4];
    for (int i = 0; i < 4; i++) {
        snprintf(text, sizeof text, "%s%s", kPrefix, kSuffixes[i]);
        pagoda_request_options_t o = greedy(24);
        ids[i] = submit(s, text, &o);
        if (i == 0) step_until_done(s, 200); /* the first computes the prefix alone */
    }
    step_until_done(s, 200);
    for (int i = 0; i < 4; i++) out[i] = *result_of(s, ids[i]);
    *es = engine_stats(s);
    *ks = kv_stats(s);
    close_serving(s);
}

static void test_prefix_caching_same_text_fewer_tokens(void **state) {
    (void)state;
    gathered_t off[4], on[4];
    pagoda_engine_stats_t es_off, es_on;
    pagoda_kv_cache_stats_t ks_off, ks_on;
    run_shared_prefix(0, off, &es_off, &ks_off);
    run_shared_prefix(1, on, &es_on, &ks_on);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(on[i].n_tokens, 24);
        assert_memory_equal(on[i].tokens, off[i].tokens, 24 * sizeof(int32_t));
    }
    assert_int_equal(ks_off.prefix_hits, 0);
    assert_true(ks_on.prefix_hits > 0);
    assert_true(ks_on.blocks_cached > 0);
    assert_true(es_on.prompt_tokens < es_off.prompt_tokens);
    assert_int_equal(es_on.generated_tokens, 4 * 24);
    assert_int_equal(es_on.requests_finished, 4);
    printf("prefix cache: %lld/%lld block lookups hit (%.0f%%); prompt tokens computed %lld vs %lld "
           "without\n",
           (long long)ks_on.prefix_hits, (long long)ks_on.prefix_queries,
           100.0 * (double)ks_on.prefix_hits / (double)ks_on.prefix_queries,
           (long long)es_on.prompt_tokens, (long long)es_off.prompt_tokens);
}

static const char *const kPrompts[6] = {"Once upon a time", "The little dog", "Tom and Sue went",
                                        "A big red ball", "One day, a bird", "Lily was sad"};

/* Each prompt's greedy tokens alone, then together in `s`; returns the engine stats. */
static pagoda_engine_stats_t run_equals_alone(serving_t *s, int32_t max_tokens) {
    gathered_t alone[6];
    for (int i = 0; i < 6; i++) {
        serving_t *a = open_serving(256, 16, 1, PAGODA_PREEMPT_AUTO, PAGODA_KV_PAGED, 0);
        pagoda_request_options_t o = greedy(max_tokens);
        uint64_t id = submit(a, kPrompts[i], &o);
        step_until_done(a, 500);
        alone[i] = *result_of(a, id);
        close_serving(a);
    }
    uint64_t ids[6];
    for (int i = 0; i < 6; i++) {
        pagoda_request_options_t o = greedy(max_tokens);
        ids[i] = submit(s, kPrompts[i], &o);
    }
    step_until_done(s, 2000);
    for (int i = 0; i < 6; i++) {
        gathered_t *g = result_of(s, ids[i]);
        assert_int_equal(g->n_tokens, alone[i].n_tokens);
        assert_memory_equal(g->tokens, alone[i].tokens, g->n_tokens * sizeof(int32_t));
        /* cumulative_logprob is the sum of the chosen tokens' logprobs. */
        assert_true(fabsf(g->cumulative - g->logprob_sum) <= 1e-3f * (1.0f + fabsf(g->logprob_sum)));
        assert_true(g->cumulative < 0.0f);
    }
    return engine_stats(s);
}

/* 12 blocks of 4 tokens cannot hold 6 growing sequences: the latest are swapped out and back. */
static void test_swap_preemption_equals_alone(void **state) {
    (void)state;
    serving_t *s = open_serving(12, 4, 1, PAGODA_PREEMPT_SWAP, PAGODA_KV_PAGED, 0);
    pagoda_engine_stats_t es = run_equals_alone(s, 24);
    assert_true(es.preemptions_swap > 0);
    assert_int_equal(es.requests_swapped, 0);
    assert_true(kv_stats(s).swap_blocks_total > 0);
    close_serving(s);
}

static void test_recompute_preemption_counts(void **state) {
    (void)state;
    serving_t *s = open_serving(12, 4, 1, PAGODA_PREEMPT_RECOMPUTE, PAGODA_KV_PAGED, 0);
    pagoda_engine_stats_t es = run_equals_alone(s, 24);
    assert_true(es.preemptions_recompute > 0);
    assert_int_equal(es.preemptions_swap, 0);
    close_serving(s);
}

/* Contiguous reservation: same text; blocks for prompt + max_tokens are held from the start. */
static void test_contiguous_equals_alone(void **state) {
    (void)state;
    serving_t *s = open_serving(64, 4, 1, PAGODA_PREEMPT_AUTO, PAGODA_KV_CONTIGUOUS, 0);
    pagoda_request_options_t o = greedy(40);
    uint64_t id = submit(s, "Once upon a time", &o);
    TEST_ASSERT_OK(pagoda_engine_step(s->stack.engine));
    pagoda_kv_cache_stats_t st = kv_stats(s);
    const gathered_t *g = result_of(s, id);
    (void)g;
    /* Whole reservation: ceil((prompt + 40) / 4) blocks, mostly empty after one step. */
    assert_true(st.blocks_used * 4 >= 40);
    assert_true(st.slots_wasted >= 36);
    step_until_done(s, 200);
    pagoda_engine_stats_t es = run_equals_alone(s, 24);
    assert_int_equal(es.preemptions_recompute + es.preemptions_swap, 0);
    assert_int_equal(kv_stats(s).prefix_hits, 0);
    close_serving(s);
}

/* One sequence at a time: lower priority values run first, ties in arrival order. */
static void test_priorities_order_admission(void **state) {
    (void)state;
    serving_t *s = open_serving(64, 16, 1, PAGODA_PREEMPT_AUTO, PAGODA_KV_PAGED, 1);
    const int32_t priorities[4] = {5, 0, 5, -1};
    uint64_t ids[4];
    for (int i = 0; i < 4; i++) {
        pagoda_request_options_t o = greedy(4);
        o.priority = priorities[i];
        ids[i] = submit(s, kPrompts[i], &o);
    }
    step_until_done(s, 200);
    assert_int_equal(result_of(s, ids[3])->order, 0);
    assert_int_equal(result_of(s, ids[1])->order, 1);
    assert_int_equal(result_of(s, ids[0])->order, 2);
    assert_int_equal(result_of(s, ids[2])->order, 3);
    close_serving(s);
}

/* A swapped-out request aborted: its swap blocks are freed and the others finish. */
static void test_abort_while_swapped(void **state) {
    (void)state;
    serving_t *s = open_serving(10, 4, 1, PAGODA_PREEMPT_SWAP, PAGODA_KV_PAGED, 0);
    uint64_t ids[6];
    for (int i = 0; i < 6; i++) {
        pagoda_request_options_t o = greedy(32);
        ids[i] = submit(s, kPrompts[i], &o);
    }
    int aborted = 0;
    for (int steps = 0; pagoda_engine_has_work(s->stack.engine) && steps < 2000; steps++) {
        TEST_ASSERT_OK(pagoda_engine_step(s->stack.engine));
        drain(s);
        if (!aborted && engine_stats(s).requests_swapped > 0) {
            assert_true(kv_stats(s).swap_blocks_used > 0);
            /* Abort every unfinished request that is not running: the swapped ones among them. */
            for (int i = 5; i >= 0; i--) {
                if (result_of(s, ids[i])->finished) continue;
                TEST_ASSERT_OK(pagoda_engine_abort(s->stack.engine, ids[i]));
                drain(s);
                if (engine_stats(s).requests_swapped == 0) break;
            }
            assert_int_equal(kv_stats(s).swap_blocks_used, 0);
            aborted = 1;
        }
    }
    assert_true(aborted);
    drain(s);
    for (int i = 0; i < 6; i++) assert_true(result_of(s, ids[i])->finished);
    close_serving(s);
}

static void test_multi_sequence_options_rejected(void **state) {
    (void)state;
    serving_t *s = open_serving(64, 16, 1, PAGODA_PREEMPT_AUTO, PAGODA_KV_PAGED, 8);
    uint64_t id = 0;
    pagoda_request_options_t o = greedy(4);
    o.n = 3;
    o.best_of = 2;
    test_expect_failure(pagoda_engine_submit_text(s->stack.engine, "Hi", 2, &o, &id), PAGODA_ERR_INVALID_ARGUMENT,
                        "best_of");
    o = greedy(4);
    o.beam_width = 2;
    o.n = 3;
    test_expect_failure(pagoda_engine_submit_text(s->stack.engine, "Hi", 2, &o, &id), PAGODA_ERR_INVALID_ARGUMENT,
                        "beam_width");
    o = greedy(4);
    o.n = 9; /* more sequences than max_num_seqs = 8 */
    test_expect_failure(pagoda_engine_submit_text(s->stack.engine, "Hi", 2, &o, &id), PAGODA_ERR_INVALID_ARGUMENT,
                        "max_num_seqs");
    o = greedy(4);
    o.beam_width = 2;
    o.early_stopping = 2;
    test_expect_failure(pagoda_engine_submit_text(s->stack.engine, "Hi", 2, &o, &id), PAGODA_ERR_INVALID_ARGUMENT,
                        "early_stopping");
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.preemption = 7;
    pagoda_engine_t *e = NULL;
    pagoda_engine_destroy(s->stack.engine);
    s->stack.engine = NULL;
    test_expect_failure(pagoda_engine_create(s->stack.model, s->stack.mesh, NULL, s->stack.cache, &eo, &e),
                        PAGODA_ERR_INVALID_ARGUMENT, "preemption");
    assert_null(e);
    pagoda_engine_options_default(&eo);
    TEST_ASSERT_OK(pagoda_engine_create(s->stack.model, s->stack.mesh, NULL, s->stack.cache, &eo, &s->stack.engine));
    close_serving(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_caching_same_text_fewer_tokens),
        cmocka_unit_test(test_swap_preemption_equals_alone),
        cmocka_unit_test(test_recompute_preemption_counts),
        cmocka_unit_test(test_contiguous_equals_alone),
        cmocka_unit_test(test_priorities_order_admission),
        cmocka_unit_test(test_abort_while_swapped),
        cmocka_unit_test(test_multi_sequence_options_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
