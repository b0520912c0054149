/* The engine through the public API on the real stories260K: greedy text as llama.cpp writes
 * it, batches equal to runs alone (also with chunked prefill and preemption), sampling that a
 * seed reproduces, stop conditions, log-probabilities, aborts, bad input, and a KV cache that
 * is empty again after every test. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"
#include "test_util.h"

#define MODEL_PATH ENGINE_STACK_MODEL
#define MAX_REQUESTS 64
#define MAX_TOKENS 512

static const char *const kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball.";

/* One request's outputs, gathered. */
typedef struct result {
    uint64_t id;
    int32_t tokens[MAX_TOKENS];
    float logprobs[MAX_TOKENS];
    size_t n_tokens;
    char text[4096];
    size_t text_len;
    size_t n_outputs;
    pagoda_finish_reason_t finish;
    float *prompt_logprobs;       /* owned copy, when asked */
    pagoda_logprob_t *prompt_top; /* owned copy, when asked */
    size_t n_prompt;
} result_t;

typedef struct fixture {
    engine_stack_t stack;
    result_t results[MAX_REQUESTS];
    size_t n_results;
} fixture_t;

static int64_t blocks_used(const fixture_t *f) { return engine_stack_kv_stats(&f->stack).blocks_used; }

/* A model, mesh, cache of `num_blocks` blocks of `block_size`, and an engine batching at most
 * `max_tokens` tokens per step. */
/* The decode-graph mode make_fixture gives its engines (the CPU's default is op by op). */
static int32_t g_decode_graphs = PAGODA_DECODE_GRAPHS_AUTO;
/* Where make_fixture's engines pick tokens (the CPU's default is the host). */
static int32_t g_device_sampling = PAGODA_DEVICE_SAMPLING_AUTO;
/* make_fixture's activation type (0: the engine's choice, f32 on the CPU). */
static int32_t g_activation_dtype = 0;

static fixture_t *make_fixture(int64_t num_blocks, int32_t block_size, int32_t max_tokens) {
    fixture_t *f = test_xcalloc(1, sizeof *f);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = num_blocks;
    ko.block_size = block_size;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (max_tokens > 0) eo.max_num_batched_tokens = max_tokens;
    eo.decode_graphs = g_decode_graphs;
    eo.device_sampling = g_device_sampling;
    eo.activation_dtype = g_activation_dtype;
    engine_stack_open(&f->stack, &ko, &eo);
    return f;
}

/* Every test ends here: nothing left running, no block lent, everything released. */
static void destroy_fixture(fixture_t *f) {
    engine_stack_close(&f->stack);
    for (size_t i = 0; i < f->n_results; i++) {
        free(f->results[i].prompt_logprobs);
        free(f->results[i].prompt_top);
    }
    free(f);
}

static result_t *result_for(fixture_t *f, uint64_t id) {
    for (size_t i = 0; i < f->n_results; i++)
        if (f->results[i].id == id) return &f->results[i];
    assert_true(f->n_results < MAX_REQUESTS);
    result_t *r = &f->results[f->n_results++];
    r->id = id;
    return r;
}

static void gather(fixture_t *f, const pagoda_output_t *o) {
    result_t *r = result_for(f, o->request_id);
    assert_int_equal(r->finish, PAGODA_FINISH_NONE); /* nothing after the last output */
    assert_true(r->n_tokens + o->n_tokens <= MAX_TOKENS);
    if (o->n_tokens > 0) memcpy(r->tokens + r->n_tokens, o->token_ids, o->n_tokens * sizeof(int32_t));
    if (o->logprobs) memcpy(r->logprobs + r->n_tokens, o->logprobs, o->n_tokens * sizeof(float));
    r->n_tokens += o->n_tokens;
    assert_int_equal(o->n_generated, r->n_tokens);
    assert_true(r->text_len + o->text_len < sizeof r->text);
    memcpy(r->text + r->text_len, o->text, o->text_len);
    r->text_len += o->text_len;
    assert_int_equal(strlen(o->text), o->text_len);
    r->finish = o->finish_reason;
    r->n_outputs++;
    if (o->prompt_logprobs) {
        assert_null(r->prompt_logprobs); /* once, in the first output */
        r->n_prompt = o->n_prompt_tokens;
        r->prompt_logprobs = test_xmalloc(o->n_prompt_tokens * sizeof(float));
        memcpy(r->prompt_logprobs, o->prompt_logprobs, o->n_prompt_tokens * sizeof(float));
        size_t n_top = o->n_prompt_tokens * (size_t)o->n_prompt_top_logprobs;
        r->prompt_top = test_xmalloc(n_top * sizeof(pagoda_logprob_t));
        memcpy(r->prompt_top, o->prompt_top_logprobs, n_top * sizeof(pagoda_logprob_t));
    }
}

static void drain(fixture_t *f) {
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    pagoda_status_t s;
    while ((s = pagoda_engine_poll(f->stack.engine, &o)) == PAGODA_OK) gather(f, &o);
    assert_int_equal(s, PAGODA_ERR_EMPTY);
}

/* Steps until no request is left; fails after `max_steps`. */
static void run_all(fixture_t *f, int max_steps) {
    int steps = 0;
    while (pagoda_engine_has_work(f->stack.engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
        drain(f);
        assert_true(++steps <= max_steps);
    }
    drain(f);
}

static pagoda_request_options_t greedy(int32_t max_tokens) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = max_tokens;
    return o;
}

static uint64_t submit_text(fixture_t *f, const char *text, const pagoda_request_options_t *o) {
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(f->stack.engine, text, strlen(text), o, &id));
    assert_true(id != 0);
    return id;
}

/* The must-show: "Once upon a time", greedy, 40 tokens, gives SOURCE.md's text. */
static void test_greedy_story(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 16, 0);
    pagoda_request_options_t o = greedy(40);
    uint64_t id = submit_text(f, "Once upon a time", &o);
    run_all(f, 100);
    result_t *r = result_for(f, id);
    assert_int_equal(r->n_tokens, 40);
    assert_int_equal(r->finish, PAGODA_FINISH_LENGTH);
    char full[4200];
    snprintf(full, sizeof full, "Once upon a time%.*s", (int)r->text_len, r->text);
    assert_string_equal(full, kStory);
    /* One output per generated token: the text streams. */
    assert_int_equal(r->n_outputs, 40);
    destroy_fixture(f);
}

/* SOURCE.md's ids: greedy from BOS alone. */
static void test_greedy_from_bos_ids(void **state) {
    (void)state;
    static const int32_t expected[] = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298};
    fixture_t *f = make_fixture(64, 16, 0);
    pagoda_request_options_t o = greedy(10);
    const int32_t bos = 1;
    uint64_t id;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(f->stack.engine, &bos, 1, &o, &id));
    run_all(f, 50);
    result_t *r = result_for(f, id);
    assert_int_equal(r->n_tokens, 10);
    for (int i = 0; i < 10; i++) assert_int_equal(r->tokens[i], expected[i]);
    destroy_fixture(f);
}

static const char *const kPrompts[16] = {
    "Once upon a time",          "The little dog",
    "Tom and his mom went to",   "One day, a big bird",
    "Lily wanted to",            "The sun was",
    "There was a boy named Tim", "She saw a",
    "The cat",                   "A girl had a red",
    "They played with the",      "In the park, there",
    "Ben",                       "The old man gave",
    "Sue and Max were friends.", "It was a sunny day. The",
};

/* Each prompt alone, then all together (under several batching limits): the same tokens. */
static void run_batch_equals_alone(int64_t num_blocks, int32_t block_size, int32_t max_batched,
                                   int32_t max_tokens) {
    result_t *alone = test_xcalloc(16, sizeof *alone);
    for (int i = 0; i < 16; i++) {
        fixture_t *f = make_fixture(256, 16, 0);
        pagoda_request_options_t o = greedy(max_tokens);
        uint64_t id = submit_text(f, kPrompts[i], &o);
        run_all(f, 10 * max_tokens);
        alone[i] = *result_for(f, id);
        destroy_fixture(f);
    }
    fixture_t *f = make_fixture(num_blocks, block_size, max_batched);
    uint64_t ids[16];
    for (int i = 0; i < 16; i++) {
        /* Different lengths on purpose: requests leave the batch at different steps. */
        pagoda_request_options_t o = greedy(max_tokens - (i % 4));
        ids[i] = submit_text(f, kPrompts[i], &o);
    }
    run_all(f, 100 * max_tokens);
    for (int i = 0; i < 16; i++) {
        result_t *r = result_for(f, ids[i]);
        assert_int_equal(r->n_tokens, (size_t)(max_tokens - (i % 4)));
        for (size_t t = 0; t < r->n_tokens; t++)
            if (r->tokens[t] != alone[i].tokens[t])
                fail_msg("prompt %d ('%s'), token %zu: %d in the batch, %d alone", i, kPrompts[i],
                         t, r->tokens[t], alone[i].tokens[t]);
    }
    destroy_fixture(f);
    free(alone);
}

static void test_batch_of_16_equals_alone(void **state) {
    (void)state;
    run_batch_equals_alone(512, 16, 0, 32);
}

/* A budget of 7 tokens per step: prompts are cut into chunks that attend to earlier chunks. */
static void test_chunked_prefill_equals_alone(void **state) {
    (void)state;
    run_batch_equals_alone(512, 16, 7, 24);
}

/* 24 blocks of 4 tokens cannot hold 16 growing sequences: the latest are preempted and
 * recomputed, and still write what they write alone. */
static void test_preemption_equals_alone(void **state) {
    (void)state;
    run_batch_equals_alone(24, 4, 0, 40);
}

/* Two requests drawing 48 tokens with seed 1234 and one with seed 99, all at once, with the
 * sampling parameters of `o`: the first two must agree, the third differ. */
static void expect_seeds_repeat(fixture_t *f, pagoda_request_options_t o) {
    o.max_tokens = 48;
    o.seed = 1234;
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t a = submit_text(f, "Once upon a time", &o);
    uint64_t b = submit_text(f, "Once upon a time", &o);
    o.seed = 99;
    uint64_t c = submit_text(f, "Once upon a time", &o);
    run_all(f, 200);
    result_t *ra = result_for(f, a), *rb = result_for(f, b), *rc = result_for(f, c);
    assert_int_equal(ra->n_tokens, 48);
    assert_memory_equal(ra->tokens, rb->tokens, 48 * sizeof(int32_t));
    assert_true(memcmp(ra->tokens, rc->tokens, 48 * sizeof(int32_t)) != 0);
}

/* The same seed draws the same tokens, in a batch or alone; another seed draws others. */
static void test_seeded_sampling(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 16, 0);
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 1.0f;
    o.top_k = 0;
    o.top_p = 1.0f;
    expect_seeds_repeat(f, o);
    destroy_fixture(f);
}

/* 16 requests of different lengths, greedy and seeded, as decode graphs and op by op: the
 * same tokens. The batch shrinks as requests end, so steps move between buckets (16, then 8
 * with padding) and the recorded graphs replay over changing contexts. */
static void test_decode_graphs_equal_op_by_op(void **state) {
    (void)state;
    uint64_t ids[2][16];
    fixture_t *fixtures[2];
    const int32_t modes[2] = {PAGODA_DECODE_GRAPHS_ON, PAGODA_DECODE_GRAPHS_OFF};
    for (int m = 0; m < 2; m++) {
        g_decode_graphs = modes[m];
        fixture_t *f = fixtures[m] = make_fixture(512, 16, 0);
        for (int i = 0; i < 16; i++) {
            pagoda_request_options_t o = greedy(24 - (i % 6));
            if (i % 2) {
                o.temperature = 0.8f;
                o.top_k = 40;
                o.top_p = 0.9f;
                o.seed = 1000u + (uint64_t)i;
            }
            ids[m][i] = submit_text(f, kPrompts[i], &o);
        }
        run_all(f, 2000);
    }
    g_decode_graphs = PAGODA_DECODE_GRAPHS_AUTO;
    /* Most steps decode only; the first of each bucket runs op by op to size the scratch. */
    const pagoda_engine_stats_t on = engine_stack_engine_stats(&fixtures[0]->stack);
    const pagoda_engine_stats_t off = engine_stack_engine_stats(&fixtures[1]->stack);
    printf("decode graphs: %lld of %lld steps\n", (long long)on.graph_steps, (long long)on.steps);
    assert_true(on.graph_steps >= on.steps / 2);
    assert_int_equal(off.graph_steps, 0);
    for (int i = 0; i < 16; i++) {
        result_t *g = result_for(fixtures[0], ids[0][i]), *e = result_for(fixtures[1], ids[1][i]);
        assert_int_equal(g->n_tokens, (size_t)(24 - (i % 6)));
        assert_int_equal(g->n_tokens, e->n_tokens);
        for (size_t t = 0; t < g->n_tokens; t++)
            if (g->tokens[t] != e->tokens[t])
                fail_msg("prompt %d, token %zu: %d with decode graphs, %d op by op", i, t,
                         g->tokens[t], e->tokens[t]);
    }
    destroy_fixture(fixtures[0]);
    destroy_fixture(fixtures[1]);
}

/* Tokens picked by the device's SAMPLE: greedy requests write what the host sampler writes,
 * with the same log-probabilities; seeded draws repeat with their seed and differ with
 * another; a request that needs the host (penalties) makes its steps sample on the host. */
static void test_device_sampling(void **state) {
    (void)state;
    enum { kRequests = 8 };
    uint64_t ids[2][kRequests];
    fixture_t *fixtures[2];
    const int32_t modes[2] = {PAGODA_DEVICE_SAMPLING_ON, PAGODA_DEVICE_SAMPLING_OFF};
    for (int m = 0; m < 2; m++) {
        g_device_sampling = modes[m];
        fixture_t *f = fixtures[m] = make_fixture(512, 16, 0);
        for (int i = 0; i < kRequests; i++) {
            pagoda_request_options_t o = greedy(20);
            o.logprobs = 0; /* the chosen token's */
            ids[m][i] = submit_text(f, kPrompts[i], &o);
        }
        run_all(f, 500);
    }
    g_device_sampling = PAGODA_DEVICE_SAMPLING_AUTO;
    const pagoda_engine_stats_t on = engine_stack_engine_stats(&fixtures[0]->stack);
    assert_int_equal(on.device_sampled_tokens, on.generated_tokens);
    assert_int_equal(engine_stack_engine_stats(&fixtures[1]->stack).device_sampled_tokens, 0);
    for (int i = 0; i < kRequests; i++) {
        result_t *d = result_for(fixtures[0], ids[0][i]), *h = result_for(fixtures[1], ids[1][i]);
        assert_int_equal(d->n_tokens, 20);
        assert_memory_equal(d->tokens, h->tokens, 20 * sizeof(int32_t));
        for (int t = 0; t < 20; t++)
            if (!(fabsf(d->logprobs[t] - h->logprobs[t]) <= 1e-4f))
                fail_msg("request %d token %d: log-probability %.7g on the device, %.7g on the "
                         "host", i, t, (double)d->logprobs[t], (double)h->logprobs[t]);
    }
    destroy_fixture(fixtures[0]);
    destroy_fixture(fixtures[1]);

    /* Seeded draws on the device: the same seed repeats, another differs. */
    g_device_sampling = PAGODA_DEVICE_SAMPLING_ON;
    fixture_t *f = make_fixture(256, 16, 0);
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.9f;
    o.top_k = 50;
    o.top_p = 0.95f;
    o.min_p = 0.02f;
    expect_seeds_repeat(f, o);
    const pagoda_engine_stats_t st = engine_stack_engine_stats(&f->stack);
    assert_int_equal(st.device_sampled_tokens, st.generated_tokens);

    /* A request with a penalty beside one without: their shared steps sample on the host. */
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    o.seed = 7;
    o.max_tokens = 10;
    uint64_t plain = submit_text(f, "The little dog", &o);
    o.repetition_penalty = 1.3f;
    uint64_t penalised = submit_text(f, "The little dog", &o);
    run_all(f, 100);
    assert_int_equal(result_for(f, plain)->n_tokens, 10);
    assert_int_equal(result_for(f, penalised)->n_tokens, 10);
    const pagoda_engine_stats_t after = engine_stack_engine_stats(&f->stack);
    assert_int_equal(after.device_sampled_tokens, st.device_sampled_tokens);
    destroy_fixture(f);
    g_device_sampling = PAGODA_DEVICE_SAMPLING_AUTO;
}

/* The configuration a GPU gets by default, on the CPU: bf16 activations, decode graphs and
 * tokens picked on the device, with 16 requests of different lengths. Every request runs to its
 * length, the graphs and the device sampler are used, and no block is left lent (the fixture's
 * close checks). Most greedy tokens agree with f32 activations: bf16 rounding moves a logit by
 * about 1e-3 of its size, which flips only near-ties, after which a sequence may drift. */
static void test_gpu_configuration_on_cpu(void **state) {
    (void)state;
    uint64_t ids[2][16];
    fixture_t *fixtures[2];
    for (int m = 0; m < 2; m++) {
        g_decode_graphs = m == 0 ? PAGODA_DECODE_GRAPHS_ON : PAGODA_DECODE_GRAPHS_OFF;
        g_device_sampling = m == 0 ? PAGODA_DEVICE_SAMPLING_ON : PAGODA_DEVICE_SAMPLING_OFF;
        g_activation_dtype = m == 0 ? PAGODA_DTYPE_BF16 : PAGODA_DTYPE_F32;
        fixture_t *f = fixtures[m] = make_fixture(512, 16, 0);
        for (int i = 0; i < 16; i++) {
            pagoda_request_options_t o = greedy(24 - (i % 6));
            o.logprobs = 0;
            ids[m][i] = submit_text(f, kPrompts[i], &o);
        }
        run_all(f, 2000);
    }
    g_decode_graphs = PAGODA_DECODE_GRAPHS_AUTO;
    g_device_sampling = PAGODA_DEVICE_SAMPLING_AUTO;
    g_activation_dtype = 0;
    /* The first token's log-probability shows the rounding: close to f32's, but not equal. */
    double worst = 0.0;
    for (int i = 0; i < 16; i++) {
        const double d = fabs((double)result_for(fixtures[0], ids[0][i])->logprobs[0] -
                              (double)result_for(fixtures[1], ids[1][i])->logprobs[0]);
        if (d > worst) worst = d;
    }
    printf("bf16 activations: first-token log-probabilities within %.3g of f32's\n", worst);
    assert_true(worst > 1e-6 && worst < 0.1);
    const pagoda_engine_stats_t st = engine_stack_engine_stats(&fixtures[0]->stack);
    assert_true(st.graph_steps > 0);
    assert_int_equal(st.device_sampled_tokens, st.generated_tokens);
    size_t same = 0, total = 0;
    for (int i = 0; i < 16; i++) {
        result_t *h = result_for(fixtures[0], ids[0][i]), *f32 = result_for(fixtures[1], ids[1][i]);
        assert_int_equal(h->n_tokens, (size_t)(24 - (i % 6)));
        for (size_t t = 0; t < h->n_tokens; t++) same += h->tokens[t] == f32->tokens[t];
        total += h->n_tokens;
    }
    printf("bf16 activations: %zu of %zu greedy tokens as with f32\n", same, total);
    assert_true(2 * same >= total);
    destroy_fixture(fixtures[0]);
    destroy_fixture(fixtures[1]);
}

/* A stop string cuts the text before it; a stop token id ends without text; EOS ends unless
 * ignored. */
static void test_stop_conditions(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 16, 0);
    pagoda_request_options_t o = greedy(40);
    const char *stops[] = {"Lily"};
    o.stop_strings = stops;
    o.n_stop_strings = 1;
    uint64_t s1 = submit_text(f, "Once upon a time", &o);
    o = greedy(40);
    const int32_t stop_id = 261; /* the story's third token */
    o.stop_token_ids = &stop_id;
    o.n_stop_token_ids = 1;
    uint64_t s2 = submit_text(f, "Once upon a time", &o);
    run_all(f, 100);
    result_t *r1 = result_for(f, s1), *r2 = result_for(f, s2);
    assert_int_equal(r1->finish, PAGODA_FINISH_STOP_STRING);
    r1->text[r1->text_len] = '\0';
    assert_string_equal(r1->text, ", there was a little girl named ");
    assert_int_equal(r2->finish, PAGODA_FINISH_STOP_TOKEN);
    assert_int_equal(r2->tokens[r2->n_tokens - 1], stop_id);
    destroy_fixture(f);
}

/* Prompt log-probabilities are the model's own: scoring a prompt that is the greedy story gives,
 * at each generated position, the greedy token as the top-1 with the logprob generation saw. */
static void test_prompt_logprobs_match_generation(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 16, 5); /* chunks of 5: rows span several steps */
    pagoda_request_options_t o = greedy(12);
    o.logprobs = 0;
    const int32_t bos = 1;
    uint64_t g;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(f->stack.engine, &bos, 1, &o, &g));
    run_all(f, 100);
    result_t gen = *result_for(f, g);
    assert_int_equal(gen.n_tokens, 12);

    int32_t prompt[13];
    prompt[0] = bos;
    memcpy(prompt + 1, gen.tokens, 12 * sizeof(int32_t));
    o = greedy(1);
    o.prompt_logprobs = 3;
    uint64_t p;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(f->stack.engine, prompt, 13, &o, &p));
    run_all(f, 100);
    result_t *r = result_for(f, p);
    assert_non_null(r->prompt_logprobs);
    assert_int_equal(r->n_prompt, 13);
    assert_true(isnan(r->prompt_logprobs[0]));
    assert_int_equal(r->prompt_top[0].token_id, -1);
    for (int i = 1; i < 13; i++) {
        const pagoda_logprob_t *top = r->prompt_top + i * 3;
        assert_int_equal(top[0].token_id, prompt[i]);
        assert_true(top[0].logprob >= top[1].logprob && top[1].logprob >= top[2].logprob);
        assert_true(fabsf(r->prompt_logprobs[i] - top[0].logprob) < 1e-6f);
        assert_true(fabsf(r->prompt_logprobs[i] - gen.logprobs[i - 1]) < 1e-4f);
        assert_true(r->prompt_logprobs[i] <= 0.0f);
    }
    destroy_fixture(f);
}

/* Aborts while waiting, mid-prefill and mid-decode end the request with ABORTED and free its
 * blocks at once; a second abort finds nothing. */
static void test_abort(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 4, 3);
    pagoda_request_options_t o = greedy(30);
    uint64_t waiting = submit_text(f, "Once upon a time", &o);
    TEST_ASSERT_OK(pagoda_engine_abort(f->stack.engine, waiting));
    uint64_t prefilling = submit_text(f, "There was a boy named Tim who liked to run", &o);
    uint64_t decoding = submit_text(f, "The", &o);
    TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine)); /* 3 tokens: a chunk of the long prompt */
    TEST_ASSERT_OK(pagoda_engine_abort(f->stack.engine, prefilling));
    for (int i = 0; i < 4; i++) TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
    assert_true(blocks_used(f) > 0);
    TEST_ASSERT_OK(pagoda_engine_abort(f->stack.engine, decoding));
    assert_int_equal(blocks_used(f), 0);
    assert_int_equal(pagoda_engine_abort(f->stack.engine, decoding), PAGODA_ERR_NOT_FOUND);
    drain(f);
    assert_int_equal(result_for(f, waiting)->finish, PAGODA_FINISH_ABORTED);
    assert_int_equal(result_for(f, prefilling)->finish, PAGODA_FINISH_ABORTED);
    assert_int_equal(result_for(f, decoding)->finish, PAGODA_FINISH_ABORTED);
    assert_true(result_for(f, decoding)->n_tokens > 0);
    destroy_fixture(f);
}

/* Destroying an engine with requests in flight returns every block. */
static void test_destroy_with_requests_in_flight(void **state) {
    (void)state;
    fixture_t *f = make_fixture(128, 16, 0);
    pagoda_request_options_t o = greedy(30);
    for (int i = 0; i < 4; i++) submit_text(f, kPrompts[i], &o);
    TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
    TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
    assert_true(blocks_used(f) > 0);
    pagoda_engine_destroy(f->stack.engine);
    assert_int_equal(blocks_used(f), 0);
    /* The cache serves a new engine. */
    TEST_ASSERT_OK(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, f->stack.cache, NULL, &f->stack.engine));
    destroy_fixture(f);
}

/* Bad requests and misuse get a status and a message naming the problem. */
static void test_bad_input(void **state) {
    (void)state;
    fixture_t *f = make_fixture(8, 16, 0); /* 128 tokens of cache */
    uint64_t id;
    pagoda_request_options_t o = greedy(4);
    const int32_t ids[] = {1, 512};
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 2, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "outside the vocabulary");
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 0, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "empty");
    int32_t long_prompt[200];
    for (int i = 0; i < 200; i++) long_prompt[i] = 300;
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, long_prompt, 200, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "KV cache 128 tokens");
    o.temperature = -1.0f;
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 1, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "temperature");
    o = greedy(0);
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 1, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "max_tokens");
    o = greedy(4);
    o.top_p = 0.0f;
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 1, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "top_p");
    o = greedy(4);
    const char *stops[] = {""};
    o.stop_strings = stops;
    o.n_stop_strings = 1;
    test_expect_failure(pagoda_engine_submit_tokens(f->stack.engine, ids, 1, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "stop string");
    test_expect_failure(pagoda_engine_abort(f->stack.engine, 424242), PAGODA_ERR_NOT_FOUND, "424242");
    test_expect_failure(pagoda_engine_step(NULL), PAGODA_ERR_INVALID_HANDLE, "engine");

    /* One cache, one engine. */
    pagoda_engine_t *second = NULL;
    test_expect_failure(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, f->stack.cache, NULL, &second),
                        PAGODA_ERR_INVALID_ARGUMENT, "already serves");
    assert_null(second);
    /* A cache sized for another model. */
    pagoda_model_t *other = NULL;
    TEST_ASSERT_OK(pagoda_model_open(MODEL_PATH, NULL, &other));
    test_expect_failure(pagoda_engine_create(other, f->stack.mesh, NULL, f->stack.cache, NULL, &second),
                        PAGODA_ERR_INVALID_ARGUMENT, "another model");
    pagoda_model_destroy(other);

    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    pagoda_kv_cache_t *cache = NULL;
    ko.block_size = 129;
    test_expect_failure(pagoda_kv_cache_create(f->stack.model, f->stack.mesh, NULL, &ko, &cache),
                        PAGODA_ERR_INVALID_ARGUMENT, "block_size");
    pagoda_kv_cache_options_default(&ko);
    ko.memory_bytes = 10;
    test_expect_failure(pagoda_kv_cache_create(f->stack.model, f->stack.mesh, NULL, &ko, &cache),
                        PAGODA_ERR_INVALID_ARGUMENT, "holds no block");
    assert_null(cache);

    /* An engine option out of range, on a cache no engine serves. */
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = 8;
    TEST_ASSERT_OK(pagoda_kv_cache_create(f->stack.model, f->stack.mesh, NULL, &ko, &cache));
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.decode_graphs = 7;
    test_expect_failure(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, cache, &eo, &second),
                        PAGODA_ERR_INVALID_ARGUMENT, "decode_graphs");
    pagoda_engine_options_default(&eo);
    eo.device_sampling = -1;
    test_expect_failure(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, cache, &eo, &second),
                        PAGODA_ERR_INVALID_ARGUMENT, "device_sampling");
    pagoda_engine_options_default(&eo);
    eo.activation_dtype = PAGODA_DTYPE_I32;
    test_expect_failure(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, cache, &eo, &second),
                        PAGODA_ERR_INVALID_ARGUMENT, "activation_dtype");
    assert_null(second);
    pagoda_kv_cache_destroy(cache);
    destroy_fixture(f);
}

static void test_mesh_and_model_errors(void **state) {
    (void)state;
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    pagoda_mesh_t *mesh = NULL;
    mo.devices = "tpu:0";
    test_expect_failure(pagoda_mesh_create(&mo, &mesh), PAGODA_ERR_NOT_FOUND, "no backend named 'tpu'");
    mo.devices = "cpu:7";
    test_expect_failure(pagoda_mesh_create(&mo, &mesh), PAGODA_ERR_NOT_FOUND, "cpu:7");
    mo.devices = "cpu";
    test_expect_failure(pagoda_mesh_create(&mo, &mesh), PAGODA_ERR_INVALID_ARGUMENT, "<backend>:<index>");
    mo.devices = "cpu:0";
    mo.axes = "tp=2";
    test_expect_failure(pagoda_mesh_create(&mo, &mesh), PAGODA_ERR_INVALID_ARGUMENT, "span 2 devices");
    mo.axes = NULL;
    TEST_ASSERT_OK(pagoda_mesh_create(&mo, &mesh));
    assert_int_equal(pagoda_mesh_device_count(mesh), 1);
    assert_string_equal(pagoda_mesh_device_name(mesh, 0), "cpu:0");
    assert_null(pagoda_mesh_device_name(mesh, 1));
    pagoda_mesh_destroy(mesh);

    pagoda_model_t *model = NULL;
    test_expect_failure(pagoda_model_open("/nonexistent/x.gguf", NULL, &model), PAGODA_ERR_NOT_FOUND,
                        "/nonexistent/x.gguf");
    assert_null(model);
    TEST_ASSERT_OK(pagoda_model_open(MODEL_PATH, NULL, &model));
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_model_get_info(model, &info));
    assert_string_equal(info.architecture, "llama");
    assert_int_equal(info.vocab_size, 512);
    assert_int_equal(info.n_layers, 5);
    assert_int_equal(info.n_kv_heads, 4);
    assert_int_equal(info.bos_token_id, 1);
    assert_int_equal(info.eos_token_id, 2);
    assert_string_equal(pagoda_model_path(model), MODEL_PATH);
    pagoda_model_destroy(model);
}

/* Progress by callback (increasing, ending at 1) and by polling a background open; both cancel. */
typedef struct progress_log {
    float last;
    int calls;
    int cancel_at;
} progress_log_t;

static int on_progress(void *user, float fraction, const char *stage) {
    progress_log_t *log = user;
    assert_non_null(stage);
    assert_true(fraction >= log->last && fraction <= 1.0f);
    log->last = fraction;
    return ++log->calls != log->cancel_at;
}

static void test_model_progress_and_cancel(void **state) {
    (void)state;
    progress_log_t log = {0.0f, 0, -1};
    pagoda_model_options_t mo;
    pagoda_model_options_default(&mo);
    mo.progress = on_progress;
    mo.progress_user = &log;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(MODEL_PATH, &mo, &model));
    assert_true(log.calls >= 2);
    assert_true(log.last == 1.0f);
    pagoda_model_destroy(model);

    progress_log_t cancelling = {0.0f, 0, 2};
    mo.progress_user = &cancelling;
    test_expect_failure(pagoda_model_open(MODEL_PATH, &mo, &model), PAGODA_ERR_CANCELLED, "cancel");
    assert_null(model);

    pagoda_model_loader_t *loader = NULL;
    TEST_ASSERT_OK(pagoda_model_load_start(MODEL_PATH, NULL, &loader));
    float fraction = 0.0f;
    int done = 0;
    while (!done) TEST_ASSERT_OK(pagoda_model_loader_progress(loader, &fraction, &done));
    assert_true(fraction == 1.0f);
    TEST_ASSERT_OK(pagoda_model_loader_finish(loader, &model));
    assert_non_null(model);
    /* The background open brings the model's tokenizer too. */
    pagoda_tokenizer_t *tokenizer = NULL;
    TEST_ASSERT_OK(pagoda_tokenizer_from_model(model, &tokenizer));
    assert_non_null(tokenizer);
    pagoda_tokenizer_destroy(tokenizer);
    pagoda_model_destroy(model);

    TEST_ASSERT_OK(pagoda_model_load_start(MODEL_PATH, NULL, &loader));
    pagoda_model_loader_cancel(loader);
    pagoda_status_t s = pagoda_model_loader_finish(loader, &model);
    /* The open may have finished before the cancel arrived; otherwise it says it was cancelled. */
    if (s != PAGODA_OK) test_expect_failure(s, PAGODA_ERR_CANCELLED, "cancel");
    pagoda_model_destroy(model);
}

/* The callback sees every output, may abort another request from inside, and nothing is
 * queued for polling. */
typedef struct callback_log {
    pagoda_engine_t *engine;
    uint64_t victim;
    int outputs;
    int finished;
    int aborted_victim;
    uint64_t finished_ids[4];
} callback_log_t;

static void on_output(void *user, const pagoda_output_t *o) {
    callback_log_t *log = user;
    log->outputs++;
    for (int i = 0; i < log->finished; i++)
        if (log->finished_ids[i] == o->request_id) fail_msg("output after request %llu finished",
                                                            (unsigned long long)o->request_id);
    if (o->finish_reason != PAGODA_FINISH_NONE) log->finished_ids[log->finished++] = o->request_id;
    if (o->request_id != log->victim && !log->aborted_victim && log->victim != 0) {
        log->aborted_victim = 1;
        TEST_ASSERT_OK(pagoda_engine_abort(log->engine, log->victim));
    }
}

static void test_output_callback(void **state) {
    (void)state;
    fixture_t *f = make_fixture(256, 16, 0);
    pagoda_engine_destroy(f->stack.engine);
    callback_log_t log = {0};
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.on_output = on_output;
    eo.on_output_user = &log;
    TEST_ASSERT_OK(pagoda_engine_create(f->stack.model, f->stack.mesh, NULL, f->stack.cache, &eo, &f->stack.engine));
    log.engine = f->stack.engine;
    pagoda_request_options_t o = greedy(10);
    submit_text(f, "Once upon a time", &o);
    log.victim = submit_text(f, "The little dog", &o);
    int steps = 0;
    while (pagoda_engine_has_work(f->stack.engine) && steps++ < 100) TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
    assert_int_equal(log.aborted_victim, 1);
    assert_int_equal(log.finished, 2);
    /* 10 tokens of the first; the victim's first token, then its abort, in that order. */
    assert_int_equal(log.outputs, 12);
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    assert_int_equal(pagoda_engine_poll(f->stack.engine, &out), PAGODA_ERR_EMPTY);
    destroy_fixture(f);
}

/* Submits and polls from another thread while this one steps: every request finishes with the
 * tokens it writes alone. */
typedef struct producer {
    fixture_t *f;
    uint64_t ids[8];
    int finished;
} producer_t;

static void *produce(void *arg) {
    producer_t *p = arg;
    pagoda_request_options_t o = greedy(12);
    for (int i = 0; i < 8; i++) {
        TEST_ASSERT_OK(pagoda_engine_submit_text(p->f->stack.engine, kPrompts[i], strlen(kPrompts[i]), &o,
                                                 &p->ids[i]));
        for (int spin = 0; spin < 1000; spin++) sched_yield();
    }
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    while (p->finished < 8) {
        if (pagoda_engine_poll(p->f->stack.engine, &out) == PAGODA_OK) {
            gather(p->f, &out);
            if (out.finish_reason != PAGODA_FINISH_NONE) p->finished++;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

static void test_submit_and_poll_from_another_thread(void **state) {
    (void)state;
    fixture_t *alone = make_fixture(256, 16, 0);
    uint64_t alone_ids[8];
    pagoda_request_options_t o = greedy(12);
    for (int i = 0; i < 8; i++) alone_ids[i] = submit_text(alone, kPrompts[i], &o);
    run_all(alone, 200);

    fixture_t *f = make_fixture(256, 16, 0);
    producer_t p = {.f = f};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, produce, &p), 0);
    /* Step until the producer has seen all eight finish. */
    while (__atomic_load_n(&p.finished, __ATOMIC_SEQ_CST) < 8) {
        TEST_ASSERT_OK(pagoda_engine_step(f->stack.engine));
        sched_yield();
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    for (int i = 0; i < 8; i++) {
        result_t *a = result_for(alone, alone_ids[i]), *b = result_for(f, p.ids[i]);
        assert_int_equal(b->n_tokens, 12);
        assert_memory_equal(a->tokens, b->tokens, 12 * sizeof(int32_t));
    }
    destroy_fixture(alone);
    destroy_fixture(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_story),
        cmocka_unit_test(test_greedy_from_bos_ids),
        cmocka_unit_test(test_batch_of_16_equals_alone),
        cmocka_unit_test(test_chunked_prefill_equals_alone),
        cmocka_unit_test(test_preemption_equals_alone),
        cmocka_unit_test(test_seeded_sampling),
        cmocka_unit_test(test_decode_graphs_equal_op_by_op),
        cmocka_unit_test(test_device_sampling),
        cmocka_unit_test(test_gpu_configuration_on_cpu),
        cmocka_unit_test(test_stop_conditions),
        cmocka_unit_test(test_prompt_logprobs_match_generation),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_destroy_with_requests_in_flight),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_mesh_and_model_errors),
        cmocka_unit_test(test_model_progress_and_cancel),
        cmocka_unit_test(test_output_callback),
        cmocka_unit_test(test_submit_and_poll_from_another_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
