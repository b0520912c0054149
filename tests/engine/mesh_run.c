/* The workload test_engine_mesh serves on every layout, and the run that serves it. */
#include "mesh_run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void make_prompt(int32_t *out, int len, int shared, int family, int index, int32_t vocab) {
    uint32_t state = 2654435761u * (uint32_t)(family + 1);
    for (int i = 0; i < len; ++i) {
        if (i == shared) state = 2246822519u * (uint32_t)(index + 7) + (uint32_t)family;
        state = state * 1664525u + 1013904223u;
        out[i] = 1 + (int32_t)((state >> 8) % (uint32_t)(vocab - 1));
    }
}

size_t submit_workload(pagoda_engine_t *engine, int32_t vocab) {
    size_t n = 0;
    int32_t prompt[80];
    for (int i = 0; i < 20; ++i) {
        pagoda_request_options_t ro;
        pagoda_request_options_default(&ro);
        ro.temperature = 0.0f;
        ro.logprobs = 0;
        ro.max_tokens = 10 + (i % 5) * 3;
        ro.flags = PAGODA_REQUEST_IGNORE_EOS;
        int len = 6 + (i * 7) % 30;
        int shared = 0;
        if (i % 4 == 1) { len = 40; shared = 32; }          /* prefix-cache hits */
        if (i % 7 == 3) len = 70;                           /* chunked prefill */
        if (i == 5 || i == 12) ro.prompt_logprobs = 1;
        if (i == 8 || i == 15) {                            /* parallel sampling */
            ro.temperature = 0.8f;
            ro.top_k = 4;
            ro.n = 2;
            ro.seed = 100 + (uint64_t)i;
        }
        /* Logit controls: every rank must sample under them (they travel on the intake). */
        static const pagoda_logit_bias_t bias[] = {{7, 3.0f}, {9, -100.0f}};
        static const int32_t bad[] = {11, 12, 13};
        static const size_t bad_lengths[] = {1, 2};
        static const int32_t allowed[] = {7, 9, 11, 12, 20, 21, 22, 40};
        if (i == 3 || i == 13) {
            ro.temperature = 0.9f;
            ro.seed = 7 + (uint64_t)i;
            ro.logit_bias = bias;
            ro.n_logit_bias = 2;
            ro.bad_words_token_ids = bad;
            ro.bad_words_lengths = bad_lengths;
            ro.n_bad_words = 2;
            ro.min_tokens = 4;
            if (i == 13) {
                ro.allowed_token_ids = allowed;
                ro.n_allowed_token_ids = 8;
            }
        }
        /* A constraint (digits and commas: every test model's vocabulary spells them): each rank
         * compiles it from the intake and masks the same rows. */
        if (i == 6 || i == 19) {
            ro.temperature = 0.9f;
            ro.seed = 31 + (uint64_t)i;
            ro.constraint_kind = PAGODA_CONSTRAINT_REGEX;
            ro.constraint = "[0-9]{1,3}(,[0-9]{1,3}){0,5}";
        }
        if (i == 10 || i == 17) {                           /* beam search */
            ro.beam_width = 2;
            ro.n = 2;
            ro.logprobs = 0;
        }
        make_prompt(prompt, len, shared, i % 4 == 1 ? 1 : 100 + i, i, vocab);
        uint64_t id;
        TEST_ASSERT_OK(pagoda_engine_submit_tokens(engine, prompt, (size_t)len, &ro, &id));
        ++n;
    }
    return n;
}

void collect(run_result_t *r, const pagoda_output_t *o) {
    size_t req = (size_t)(o->request_id - 1);
    assert_true(req < MAX_REQS);
    assert_int_equal(o->status, PAGODA_OK);
    assert_true(o->sequence_index >= 0 && o->sequence_index < MAX_SEQS);
    sequence_result_t *s = &r->seqs[req][o->sequence_index];
    for (size_t i = 0; i < o->n_tokens && s->n < MAX_TOK; ++i, ++s->n) {
        s->tokens[s->n] = o->token_ids[i];
        s->logprobs[s->n] = o->logprobs != NULL ? o->logprobs[i] : 0.0f;
    }
    if (o->prompt_logprobs != NULL)
        for (size_t i = 1; i < o->n_prompt_tokens && i < MAX_TOK; ++i)
            r->prompt_logprobs[req][r->n_prompt_logprobs[req]++] = o->prompt_logprobs[i];
}

/* The cache and engine `how` says, on `mesh`. */
void make_engine(pagoda_model_t *model, pagoda_mesh_t *mesh, const pagoda_plan_t *plan,
                 const serving_t *how, pagoda_kv_cache_t **cache_out,
                 pagoda_engine_t **engine_out) {
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = how->num_blocks;
    ko.block_size = how->block_size;
    pagoda_kv_cache_t *cache = NULL;
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, plan, &ko, &cache));
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.max_num_batched_tokens = how->max_batched;
    eo.preemption = how->preemption;
    /* Steps this small are not cut by default (decode is bound by reading the weights); cut
     * them into three micro-batches so that pipelines run several units per step. */
    eo.pipeline_micro_batches = 3;
    eo.quantized_matmul = how->quantized_matmul;
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, plan, cache, &eo, &engine));
    *cache_out = cache;
    *engine_out = engine;
}

/* Serves what `submit` submits on `mesh` (with `plan`, or the planner's) and checks that the
 * cache lends no block once it is done. */
void run_on(pagoda_model_t *model, pagoda_mesh_t *mesh, const pagoda_plan_t *plan,
                   const serving_t *how, workload_fn submit, run_result_t *r) {
    memset(r, 0, sizeof *r);
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_model_get_info(model, &info));
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    make_engine(model, mesh, plan, how, &cache, &engine);
    r->n_requests = submit(engine, (int32_t)info.vocab_size);
    int steps = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) collect(r, &out);
        assert_true(++steps < 2000);
    }
    r->stats.struct_size = sizeof r->stats;
    TEST_ASSERT_OK(pagoda_engine_get_stats(engine, &r->stats));
    r->kv.struct_size = sizeof r->kv;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &r->kv));
    assert_int_equal(r->kv.blocks_used, 0);
    assert_int_equal(r->kv.swap_blocks_used, 0);
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
}

void expect_same(const run_result_t *want, const run_result_t *got, const char *what) {
    assert_int_equal(want->n_requests, got->n_requests);
    float worst = 0.0f;
    for (size_t q = 0; q < want->n_requests; ++q) {
        for (int s = 0; s < MAX_SEQS; ++s) {
            const sequence_result_t *a = &want->seqs[q][s], *b = &got->seqs[q][s];
            if (a->n != b->n)
                fail_msg("%s: request %zu sequence %d: %zu tokens, alone %zu", what, q + 1, s,
                         b->n, a->n);
            for (size_t i = 0; i < a->n; ++i) {
                if (a->tokens[i] != b->tokens[i])
                    fail_msg("%s: request %zu sequence %d token %zu: %d, alone %d", what, q + 1,
                             s, i, b->tokens[i], a->tokens[i]);
                float d = fabsf(a->logprobs[i] - b->logprobs[i]);
                if (d > worst) worst = d;
            }
        }
        assert_int_equal(want->n_prompt_logprobs[q], got->n_prompt_logprobs[q]);
        for (size_t i = 0; i < want->n_prompt_logprobs[q]; ++i) {
            float d = fabsf(want->prompt_logprobs[q][i] - got->prompt_logprobs[q][i]);
            if (d > worst) worst = d;
        }
    }
    printf("  %-34s worst |d logprob| %.2e\n", what, (double)worst);
    if (worst > 1e-4f)
        fail_msg("%s: log-probabilities differ by %g from one device's", what, (double)worst);
}
