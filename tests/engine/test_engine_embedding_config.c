/* The model's own pooling (PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL) as a
 * sentence-transformers folder states it: a random Hugging Face checkpoint (the mesh tests'
 * gqa model) linked into a temporary folder beside a modules.json and a Pooling config. Mean
 * pooling without a Normalize module, then CLS pooling, which the engine refuses rather than
 * pooling otherwise; a plain checkpoint takes last token and L2. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_DIM 1024

static const char *const kFiles[] = {"config.json", "generation_config.json", "model.safetensors",
                                     "tokenizer.json", "tokenizer_config.json"};
static const int32_t kIds[] = {1, 17, 42, 9, 33, 8, 21, 5, 60, 2, 11, 7};

typedef struct folder {
    char path[256];
} folder_t;

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The gqa checkpoint's files linked into a new folder, with sentence-transformers' modules
 * (a Pooling module in 1_Pooling whose config sets `mode`, and a Normalize module if asked). */
static void make_folder(folder_t *f, const char *mode, int normalize) {
    snprintf(f->path, sizeof f->path, "%s", "/tmp/pagoda-st-XXXXXX");
    assert_non_null(mkdtemp(f->path));
    char from[512], to[512];
    for (size_t i = 0; i < sizeof kFiles / sizeof *kFiles; i++) {
        snprintf(from, sizeof from, "%s/gqa/hf/%s", PAGODA_MESH_MODELS_DIR, kFiles[i]);
        snprintf(to, sizeof to, "%s/%s", f->path, kFiles[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    char modules[1024];
    snprintf(modules, sizeof modules,
             "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
             "\"sentence_transformers.models.Transformer\"},"
             " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.models.Pooling\"}%s]",
             normalize ? ", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": "
                         "\"sentence_transformers.models.Normalize\"}"
                       : "");
    snprintf(to, sizeof to, "%s/modules.json", f->path);
    write_text(to, modules);
    snprintf(to, sizeof to, "%s/1_Pooling", f->path);
    assert_int_equal(mkdir(to, 0700), 0);
    char config[256];
    snprintf(config, sizeof config, "{\"word_embedding_dimension\": 64, \"%s\": true}", mode);
    snprintf(to, sizeof to, "%s/1_Pooling/config.json", f->path);
    write_text(to, config);
}

static void remove_folder(const folder_t *f) {
    char path[512];
    for (size_t i = 0; i < sizeof kFiles / sizeof *kFiles; i++) {
        snprintf(path, sizeof path, "%s/%s", f->path, kFiles[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", f->path);
    unlink(path);
    snprintf(path, sizeof path, "%s/1_Pooling", f->path);
    rmdir(path);
    snprintf(path, sizeof path, "%s/modules.json", f->path);
    unlink(path);
    rmdir(f->path);
}

typedef struct stack {
    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
} handles_t;

static void open_stack(handles_t *s, const char *path) {
    memset(s, 0, sizeof *s);
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &s->model));
    TEST_ASSERT_OK(pagoda_mesh_create(NULL, &s->mesh));
    TEST_ASSERT_OK(pagoda_kv_cache_create(s->model, s->mesh, NULL, NULL, &s->cache));
    TEST_ASSERT_OK(pagoda_engine_create(s->model, s->mesh, NULL, s->cache, NULL, &s->engine));
}

static void close_stack(handles_t *s) {
    pagoda_engine_destroy(s->engine);
    pagoda_kv_cache_destroy(s->cache);
    pagoda_mesh_destroy(s->mesh);
    pagoda_model_destroy(s->model);
}

static pagoda_status_t submit(handles_t *s, int32_t pooling, int32_t normalize, uint64_t *id) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.flags = PAGODA_REQUEST_EMBED;
    o.pooling = pooling;
    o.embedding_normalize = normalize;
    return pagoda_engine_submit_tokens(s->engine, kIds, sizeof kIds / sizeof *kIds, &o, id);
}

/* Runs the requests submitted and copies the vector of request `id` to `out`. */
static size_t embedding_of(handles_t *s, uint64_t id, float *out) {
    size_t dim = 0;
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    while (pagoda_engine_has_work(s->engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(s->engine));
        while (pagoda_engine_poll(s->engine, &o) == PAGODA_OK) {
            if (o.request_id != id) continue;
            assert_non_null(o.embedding);
            assert_true(o.n_embedding <= MAX_DIM);
            dim = o.n_embedding;
            memcpy(out, o.embedding, dim * sizeof(float));
        }
    }
    assert_true(dim > 0);
    return dim;
}

static float *vector_for(handles_t *s, int32_t pooling, int32_t normalize, size_t *dim) {
    float *v = test_xcalloc(MAX_DIM, sizeof *v);
    uint64_t id = 0;
    TEST_ASSERT_OK(submit(s, pooling, normalize, &id));
    *dim = embedding_of(s, id, v);
    return v;
}

static int same(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > 1e-6f * (1.0f + fabsf(b[i]))) return 0;
    return 1;
}

static void test_mean_without_normalize(void **state) {
    (void)state;
    folder_t f;
    make_folder(&f, "pooling_mode_mean_tokens", 0);
    handles_t s;
    open_stack(&s, f.path);
    size_t dim = 0;
    float *model = vector_for(&s, PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL, &dim);
    float *mean = vector_for(&s, PAGODA_POOLING_MEAN, PAGODA_EMBEDDING_NORMALIZE_NONE, &dim);
    float *last = vector_for(&s, PAGODA_POOLING_LAST, PAGODA_EMBEDDING_NORMALIZE_NONE, &dim);
    assert_true(same(model, mean, dim));
    assert_false(same(model, last, dim));
    free(model);
    free(mean);
    free(last);
    close_stack(&s);
    remove_folder(&f);
}

static void test_last_token_with_normalize(void **state) {
    (void)state;
    folder_t f;
    make_folder(&f, "pooling_mode_lasttoken", 1);
    handles_t s;
    open_stack(&s, f.path);
    size_t dim = 0;
    float *model = vector_for(&s, PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL, &dim);
    float *last = vector_for(&s, PAGODA_POOLING_LAST, PAGODA_EMBEDDING_NORMALIZE_L2, &dim);
    assert_true(same(model, last, dim));
    free(model);
    free(last);
    close_stack(&s);
    remove_folder(&f);
}

static void test_cls_refused(void **state) {
    (void)state;
    folder_t f;
    make_folder(&f, "pooling_mode_cls_token", 1);
    handles_t s;
    open_stack(&s, f.path);
    uint64_t id = 0;
    test_expect_failure(submit(&s, PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL, &id),
                        PAGODA_ERR_UNSUPPORTED, "cls pooling");
    /* Asked for explicitly, another pooling is served. */
    size_t dim = 0;
    float *last = vector_for(&s, PAGODA_POOLING_LAST, PAGODA_EMBEDDING_NORMALIZE_MODEL, &dim);
    free(last);
    close_stack(&s);
    remove_folder(&f);
}

/* Without sentence-transformers files: last token, L2. */
static void test_plain_checkpoint(void **state) {
    (void)state;
    handles_t s;
    open_stack(&s, PAGODA_MESH_MODELS_DIR "/gqa/hf");
    size_t dim = 0;
    float *model = vector_for(&s, PAGODA_POOLING_MODEL, PAGODA_EMBEDDING_NORMALIZE_MODEL, &dim);
    float *last = vector_for(&s, PAGODA_POOLING_LAST, PAGODA_EMBEDDING_NORMALIZE_L2, &dim);
    assert_true(same(model, last, dim));
    double sq = 0.0;
    for (size_t i = 0; i < dim; i++) sq += (double)model[i] * model[i];
    assert_true(fabs(sqrt(sq) - 1.0) < 1e-5);
    free(model);
    free(last);
    close_stack(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mean_without_normalize),
        cmocka_unit_test(test_last_token_with_normalize),
        cmocka_unit_test(test_cls_refused),
        cmocka_unit_test(test_plain_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
