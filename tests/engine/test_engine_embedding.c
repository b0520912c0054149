/* Embedding requests (PAGODA_REQUEST_EMBED) through the public API on stories260K: the pooling
 * math against a reference built from other requests (with causal attention, the hidden state
 * of prompt position k is the last-token embedding of the prompt's first k + 1 tokens, so mean
 * pooling is the average of the prefixes' unnormalized last-token embeddings), L2
 * normalization, and the same vectors whether a request runs alone, among generation requests,
 * in prefill chunks, after a prefix-cache hit or after preemption; what such a request refuses;
 * and the same vectors on two-device meshes (tp, pp, kvp). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"

#define MAX_DIM 512
#define MAX_EMB 64
#define MAX_PROMPT 64

typedef struct embedding {
    uint64_t id;
    int finished;
    int32_t finish_reason;
    size_t n_prompt;
    size_t dim;
    float vec[MAX_DIM];
} embedding_t;

typedef struct embeddings {
    embedding_t items[MAX_EMB];
    size_t count;
} embeddings_t;

static const char *const kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends.";

static embedding_t *find(embeddings_t *e, uint64_t id) {
    for (size_t i = 0; i < e->count; i++)
        if (e->items[i].id == id) return &e->items[i];
    return NULL;
}

/* Outputs of requests not in `e` (generation requests beside them) are read and dropped. */
static void drain(engine_stack_t *s, embeddings_t *e) {
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    while (pagoda_engine_poll(s->engine, &o) == PAGODA_OK) {
        embedding_t *item = find(e, o.request_id);
        if (item == NULL) continue;
        assert_int_equal(item->finished, 0);
        /* One output, the last, with the vector and no tokens. */
        assert_int_equal(o.request_finished, 1);
        assert_int_equal(o.n_tokens, 0);
        assert_int_equal(o.n_generated, 0);
        assert_int_equal(o.text_len, 0);
        item->finished = 1;
        item->finish_reason = o.finish_reason;
        item->n_prompt = o.n_prompt_tokens;
        item->dim = o.n_embedding;
        if (o.finish_reason == PAGODA_FINISH_STOP_TOKEN) {
            assert_non_null(o.embedding);
            assert_true(o.n_embedding > 0 && o.n_embedding <= MAX_DIM);
            memcpy(item->vec, o.embedding, o.n_embedding * sizeof(float));
        } else {
            assert_null(o.embedding);
        }
    }
}

static void run_to_end(engine_stack_t *s, embeddings_t *e) {
    for (int steps = 0; pagoda_engine_has_work(s->engine); steps++) {
        assert_true(steps < 2000);
        TEST_ASSERT_OK(pagoda_engine_step(s->engine));
        drain(s, e);
    }
    drain(s, e);
    for (size_t i = 0; i < e->count; i++) assert_int_equal(e->items[i].finished, 1);
}

static pagoda_request_options_t embed_options(int32_t pooling, int32_t normalize) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.flags = PAGODA_REQUEST_EMBED;
    o.pooling = pooling;
    o.embedding_normalize = normalize;
    return o;
}

static embedding_t *submit_ids(engine_stack_t *s, embeddings_t *e, const int32_t *ids, size_t n,
                               int32_t pooling, int32_t normalize) {
    pagoda_request_options_t o = embed_options(pooling, normalize);
    assert_true(e->count < MAX_EMB);
    embedding_t *item = &e->items[e->count++];
    memset(item, 0, sizeof *item);
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(s->engine, ids, n, &o, &item->id));
    return item;
}

/* Generation requests that share the steps with the embeddings. */
static void submit_generations(engine_stack_t *s, int32_t max_tokens) {
    static const char *const prompts[3] = {"The dog ran", "Tom had a red ball. He",
                                           "One day, the sun"};
    for (int i = 0; i < 3; i++) {
        pagoda_request_options_t o;
        pagoda_request_options_default(&o);
        o.temperature = 0.0f;
        o.max_tokens = max_tokens;
        uint64_t id;
        TEST_ASSERT_OK(
            pagoda_engine_submit_text(s->engine, prompts[i], strlen(prompts[i]), &o, &id));
    }
}

/* kText's ids as a text request gets them (BOS first). */
static size_t prompt_ids(const engine_stack_t *s, int32_t *out, size_t cap) {
    pagoda_tokenizer_t *tok = NULL;
    TEST_ASSERT_OK(pagoda_tokenizer_from_model(s->model, &tok));
    int32_t *ids = NULL;
    size_t n = 0;
    TEST_ASSERT_OK(pagoda_tokenizer_encode(tok, kText, strlen(kText),
                                           PAGODA_TOKENIZE_ADD_SPECIAL, &ids, &n));
    assert_true(n > 8);
    if (n > cap) n = cap;
    memcpy(out, ids, n * sizeof *ids);
    pagoda_free(ids);
    pagoda_tokenizer_destroy(tok);
    return n;
}

static size_t model_dim(const engine_stack_t *s) {
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_model_get_info(s->model, &info));
    return (size_t)info.hidden_size;
}

static double norm_of(const float *v, size_t n) {
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += (double)v[i] * v[i];
    return sqrt(sq);
}

/* max |a - b| relative to max |b|. */
static double max_rel_diff(const float *a, const float *b, size_t n) {
    double diff = 0.0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return diff / scale;
}

static void assert_close(const float *a, const float *b, size_t n, double tol) {
    const double d = max_rel_diff(a, b, n);
    if (!(d <= tol)) fail_msg("vectors differ by %g (relative), more than %g", d, tol);
}

static void test_pooling_against_prefixes(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    const size_t dim = model_dim(&s);
    int32_t ids[MAX_PROMPT];
    const size_t n = prompt_ids(&s, ids, 24);

    /* The reference: each prefix's last hidden state, unnormalized, all in one batch. */
    embeddings_t *ref = test_xcalloc(1, sizeof *ref);
    for (size_t k = 1; k <= n; k++)
        submit_ids(&s, ref, ids, k, PAGODA_POOLING_LAST, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, ref);
    double mean[MAX_DIM] = {0};
    for (size_t k = 0; k < n; k++) {
        const embedding_t *r = &ref->items[k];
        assert_int_equal(r->finish_reason, PAGODA_FINISH_STOP_TOKEN);
        assert_int_equal(r->dim, dim);
        assert_int_equal(r->n_prompt, k + 1);
        for (size_t i = 0; i < dim; i++) mean[i] += r->vec[i] / (double)n;
    }
    float mean_ref[MAX_DIM] = {0}, last_ref[MAX_DIM] = {0};
    const double last_norm = norm_of(ref->items[n - 1].vec, dim);
    double mean_norm = 0.0;
    for (size_t i = 0; i < dim; i++) mean_norm += mean[i] * mean[i];
    mean_norm = sqrt(mean_norm);
    assert_true(last_norm > 0.0 && mean_norm > 0.0);

    /* The subjects, in another batch. */
    embeddings_t *got = test_xcalloc(1, sizeof *got);
    embedding_t *mean_raw =
        submit_ids(&s, got, ids, n, PAGODA_POOLING_MEAN, PAGODA_EMBEDDING_NORMALIZE_NONE);
    embedding_t *mean_l2 =
        submit_ids(&s, got, ids, n, PAGODA_POOLING_MEAN, PAGODA_EMBEDDING_NORMALIZE_L2);
    embedding_t *last_default =
        submit_ids(&s, got, ids, n, PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL);
    run_to_end(&s, got);

    for (size_t i = 0; i < dim; i++) mean_ref[i] = (float)mean[i];
    assert_close(mean_raw->vec, mean_ref, dim, 1e-5);
    for (size_t i = 0; i < dim; i++) mean_ref[i] = (float)(mean[i] / mean_norm);
    assert_close(mean_l2->vec, mean_ref, dim, 1e-5);
    assert_true(fabs(norm_of(mean_l2->vec, dim) - 1.0) < 1e-5);
    /* The default: last token, L2-normalized (vLLM's for decoder embedding models). */
    for (size_t i = 0; i < dim; i++) last_ref[i] = (float)(ref->items[n - 1].vec[i] / last_norm);
    assert_close(last_default->vec, last_ref, dim, 1e-5);
    assert_true(fabs(norm_of(last_default->vec, dim) - 1.0) < 1e-5);
    /* Mean and last pooling are different things. */
    assert_true(max_rel_diff(mean_l2->vec, last_default->vec, dim) > 1e-2);

    free(got);
    free(ref);
    engine_stack_close(&s);
}

/* The request alone on a fresh engine: the vector every other schedule must give. */
static void embed_alone(const int32_t *ids, size_t n, int32_t pooling, float *out, size_t *dim) {
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    embeddings_t *e = test_xcalloc(1, sizeof *e);
    embedding_t *item = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    assert_int_equal(item->finish_reason, PAGODA_FINISH_STOP_TOKEN);
    *dim = item->dim;
    memcpy(out, item->vec, item->dim * sizeof(float));
    free(e);
    engine_stack_close(&s);
}

static void open_engine(engine_stack_t *s, int64_t num_blocks, int32_t block_size,
                        int32_t max_batched, int32_t preemption) {
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    if (num_blocks > 0) ko.num_blocks = num_blocks;
    if (block_size > 0) ko.block_size = block_size;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (max_batched > 0) eo.max_num_batched_tokens = max_batched;
    eo.preemption = preemption;
    engine_stack_open(s, &ko, &eo);
}

static void check_schedules(int32_t pooling) {
    int32_t ids[MAX_PROMPT];
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    const size_t n = prompt_ids(&s, ids, MAX_PROMPT);
    engine_stack_close(&s);
    float alone[MAX_DIM];
    size_t dim = 0;
    embed_alone(ids, n, pooling, alone, &dim);
    embeddings_t *e = test_xcalloc(1, sizeof *e);

    /* Among generation requests, in the same steps. */
    open_engine(&s, 0, 0, 0, PAGODA_PREEMPT_AUTO);
    submit_generations(&s, 12);
    embedding_t *mixed = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    submit_ids(&s, e, ids, n / 2, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    assert_close(mixed->vec, alone, dim, 1e-5);
    engine_stack_close(&s);

    /* In prefill chunks of 5 tokens, beside decoding requests. */
    memset(e, 0, sizeof *e);
    open_engine(&s, 0, 0, 5, PAGODA_PREEMPT_AUTO);
    submit_generations(&s, 30);
    embedding_t *chunked = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    assert_close(chunked->vec, alone, dim, 1e-5);
    engine_stack_close(&s);

    /* After a request with the same prompt left its blocks in the prefix cache. Mean pooling
     * needs every row, so it takes no cached prefix; last-token pooling does. */
    memset(e, 0, sizeof *e);
    open_engine(&s, 64, 4, 0, PAGODA_PREEMPT_AUTO);
    embedding_t *first = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    const int64_t hits_before = engine_stack_kv_stats(&s).prefix_hits;
    const int64_t computed_before = engine_stack_engine_stats(&s).prompt_tokens;
    embedding_t *cached = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    const int64_t computed = engine_stack_engine_stats(&s).prompt_tokens - computed_before;
    if (pooling == PAGODA_POOLING_LAST) {
        assert_true(engine_stack_kv_stats(&s).prefix_hits > hits_before);
        assert_true(computed < (int64_t)n);
    }
    assert_close(first->vec, alone, dim, 1e-5);
    assert_close(cached->vec, alone, dim, 1e-5);
    engine_stack_close(&s);

    /* Preempted: 14 blocks of 4 tokens cannot hold three growing generations and the prompt,
     * prefilled 4 tokens a step; the newest request (the embedding) is recomputed. */
    memset(e, 0, sizeof *e);
    open_engine(&s, 14, 4, 4, PAGODA_PREEMPT_RECOMPUTE);
    submit_generations(&s, 24);
    embedding_t *preempted = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    assert_true(engine_stack_engine_stats(&s).preemptions_recompute > 0);
    assert_close(preempted->vec, alone, dim, 1e-5);
    engine_stack_close(&s);
    free(e);
}

static void test_last_token_schedules(void **state) {
    (void)state;
    check_schedules(PAGODA_POOLING_LAST);
}

static void test_mean_schedules(void **state) {
    (void)state;
    check_schedules(PAGODA_POOLING_MEAN);
}

static void expect_refused(engine_stack_t *s, const pagoda_request_options_t *o,
                           const char *needle) {
    uint64_t id = 0;
    test_expect_failure(pagoda_engine_submit_text(s->engine, "Once", 4, o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, needle);
}

static void test_refusals(void **state) {
    (void)state;
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    pagoda_request_options_t o = embed_options(0, 0);
    o.n = 2;
    expect_refused(&s, &o, "n must be 1");
    o = embed_options(0, 0);
    o.best_of = 2;
    expect_refused(&s, &o, "best_of");
    o = embed_options(0, 0);
    o.beam_width = 2;
    expect_refused(&s, &o, "beam_width");
    o = embed_options(0, 0);
    o.logprobs = 0;
    expect_refused(&s, &o, "logprobs must be -1");
    o = embed_options(0, 0);
    o.prompt_logprobs = 1;
    expect_refused(&s, &o, "prompt_logprobs");
    const char *stop = "x";
    o = embed_options(0, 0);
    o.stop_strings = &stop;
    o.n_stop_strings = 1;
    expect_refused(&s, &o, "stop_strings");
    const int32_t stop_id = 5;
    o = embed_options(0, 0);
    o.stop_token_ids = &stop_id;
    o.n_stop_token_ids = 1;
    expect_refused(&s, &o, "stop_token_ids");
    const pagoda_logit_bias_t bias = {5, 1.0f};
    o = embed_options(0, 0);
    o.logit_bias = &bias;
    o.n_logit_bias = 1;
    expect_refused(&s, &o, "logit_bias");
    o = embed_options(0, 0);
    o.min_tokens = 1;
    o.max_tokens = 4;
    expect_refused(&s, &o, "min_tokens");
    o = embed_options(0, 0);
    o.constraint_kind = PAGODA_CONSTRAINT_JSON_OBJECT;
    expect_refused(&s, &o, "constraint_kind");
    o = embed_options(3, 0);
    expect_refused(&s, &o, "pooling must be a pagoda_pooling_t");
    o = embed_options(0, 7);
    expect_refused(&s, &o, "embedding_normalize must be");
    /* The embedding fields without the flag. */
    pagoda_request_options_default(&o);
    o.pooling = PAGODA_POOLING_MEAN;
    expect_refused(&s, &o, "PAGODA_REQUEST_EMBED");

    /* max_tokens is not read: 0 is taken, and a prompt may fill the whole context. */
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_model_get_info(s.model, &info));
    const size_t context = (size_t)info.max_position;
    int32_t *ids = test_xcalloc(context + 1, sizeof *ids);
    for (size_t i = 0; i <= context; i++) ids[i] = (int32_t)(1 + i % 300);
    o = embed_options(0, 0);
    o.max_tokens = 0;
    uint64_t id = 0;
    test_expect_failure(pagoda_engine_submit_tokens(s.engine, ids, context + 1, &o, &id),
                        PAGODA_ERR_INVALID_ARGUMENT, "embeds at most");
    embeddings_t *e = test_xcalloc(1, sizeof *e);
    embedding_t *full = &e->items[e->count++];
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(s.engine, ids, context, &o, &full->id));
    /* Aborted before its first step: one output, no vector. */
    embedding_t *aborted = &e->items[e->count++];
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(s.engine, ids, 8, &o, &aborted->id));
    TEST_ASSERT_OK(pagoda_engine_abort(s.engine, aborted->id));
    run_to_end(&s, e);
    assert_int_equal(full->finish_reason, PAGODA_FINISH_STOP_TOKEN);
    assert_int_equal(full->n_prompt, context);
    assert_int_equal(aborted->finish_reason, PAGODA_FINISH_ABORTED);
    free(e);
    free(ids);
    engine_stack_close(&s);
}

/* The same request on a two-device mesh, among generation requests (so a pipeline cuts the
 * step into micro-batches), against one device. */
static void embed_on_mesh(const char *axes, const int32_t *ids, size_t n, int32_t pooling,
                          float *full_out, float *half_out) {
    engine_stack_t s;
    memset(&s, 0, sizeof s);
    TEST_ASSERT_OK(pagoda_model_open(ENGINE_STACK_MODEL, NULL, &s.model));
    s.mesh = test_mesh("cpu:0-1", axes);
    TEST_ASSERT_OK(pagoda_kv_cache_create(s.model, s.mesh, NULL, NULL, &s.cache));
    TEST_ASSERT_OK(pagoda_engine_create(s.model, s.mesh, NULL, s.cache, NULL, &s.engine));
    embeddings_t *e = test_xcalloc(1, sizeof *e);
    submit_generations(&s, 8);
    embedding_t *full = submit_ids(&s, e, ids, n, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    embedding_t *half = submit_ids(&s, e, ids, n / 2, pooling, PAGODA_EMBEDDING_NORMALIZE_NONE);
    run_to_end(&s, e);
    assert_int_equal(full->finish_reason, PAGODA_FINISH_STOP_TOKEN);
    assert_int_equal(half->finish_reason, PAGODA_FINISH_STOP_TOKEN);
    memcpy(full_out, full->vec, full->dim * sizeof(float));
    memcpy(half_out, half->vec, half->dim * sizeof(float));
    free(e);
    engine_stack_close(&s);
}

static void test_mesh_layouts(void **state) {
    (void)state;
    int32_t ids[MAX_PROMPT];
    engine_stack_t s;
    engine_stack_open(&s, NULL, NULL);
    const size_t n = prompt_ids(&s, ids, MAX_PROMPT);
    engine_stack_close(&s);
    static const char *const layouts[] = {"tp=2", "pp=2", "kvp=2"};
    for (int32_t pooling = PAGODA_POOLING_LAST; pooling <= PAGODA_POOLING_MEAN; pooling++) {
        float full_ref[MAX_DIM], half_ref[MAX_DIM], full[MAX_DIM], half[MAX_DIM];
        size_t dim = 0, half_dim = 0;
        embed_alone(ids, n, pooling, full_ref, &dim);
        embed_alone(ids, n / 2, pooling, half_ref, &half_dim);
        for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
            embed_on_mesh(layouts[k], ids, n, pooling, full, half);
            /* Sums over shards come in another order than one device's: f32 rounding only. */
            assert_close(full, full_ref, dim, 1e-4);
            assert_close(half, half_ref, dim, 1e-4);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pooling_against_prefixes),
        cmocka_unit_test(test_last_token_schedules),
        cmocka_unit_test(test_mean_schedules),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mesh_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
