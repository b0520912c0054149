/* pagoda_model_quantize through the public API, on a random 8-layer model of width 256 in F16
 * (tests/fixtures/make_random_model.py): each type's recipe, its error, the file opening and
 * generating again (Q8_0 greedily as the F16 source does); the same model's Hugging Face folder
 * quantized to files that tokenize as the folder does and generate as the ones quantized from the
 * GGUF do (also with byte-level BPE tokenizers); refusals, cancellation, and no partial file left
 * behind. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#define SOURCE PAGODA_RANDOM_MODELS_DIR "/llama_256_f16/model.gguf"
#define HF_FOLDER PAGODA_RANDOM_MODELS_DIR "/llama_256_f16/hf"

static char g_dir[64];

static int setup(void **state) {
    (void)state;
    strcpy(g_dir, "/tmp/pagoda_quantize_XXXXXX");
    return mkdtemp(g_dir) == NULL;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd);
}

/* `name` in the test's folder; each call has its own of four buffers, so a few can be live. */
static const char *out_path(const char *name) {
    static char paths[4][128];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", g_dir, name);
    return path;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Greedy ids of `n` tokens after "Once upon a time" with the model at `path`. */
static void greedy(const char *path, int32_t *ids, size_t n) {
    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &model));
    TEST_ASSERT_OK(pagoda_mesh_create(NULL, &mesh));
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, NULL, &cache));
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine));
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = (int32_t)n;
    o.flags |= PAGODA_REQUEST_IGNORE_EOS;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(engine, "Once upon a time", 16, &o, &id));
    size_t got = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out = {.struct_size = sizeof out};
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK)
            for (size_t i = 0; i < out.n_tokens && got < n; i++) ids[got++] = out.token_ids[i];
    }
    assert_int_equal(got, n);
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

typedef struct expected_type {
    const char *name;
    int64_t tensors;
    double max_relative_rmse;
} expected_type_t;

typedef struct recipe {
    pagoda_quant_type_t type;
    const char *file;
    expected_type_t types[2]; /* by ggml id order; name NULL when absent */
} recipe_t;

/* 8 layers x 7 matrices, the embedding and the output: 58 matrices. The _M mixes give Q6_K to
 * attn_v and ffn_down in layers 0, 3, 6 and 7, and to the output. */
static const recipe_t kRecipes[] = {
    {PAGODA_QUANT_Q8_0, "q8_0.gguf", {{"Q8_0", 58, 0.01}, {NULL, 0, 0}}},
    {PAGODA_QUANT_Q4_0, "q4_0.gguf", {{"Q4_0", 57, 0.1}, {"Q6_K", 1, 0.03}}},
    {PAGODA_QUANT_Q4_K_M, "q4_k_m.gguf", {{"Q4_K", 49, 0.08}, {"Q6_K", 9, 0.03}}},
    {PAGODA_QUANT_Q5_K_M, "q5_k_m.gguf", {{"Q5_K", 49, 0.04}, {"Q6_K", 9, 0.03}}},
    {PAGODA_QUANT_Q6_K, "q6_k.gguf", {{"Q6_K", 58, 0.03}, {NULL, 0, 0}}},
};

static void test_every_type(void **state) {
    (void)state;
    int32_t source_ids[8], ids[8];
    greedy(SOURCE, source_ids, 8);
    for (size_t r = 0; r < sizeof kRecipes / sizeof kRecipes[0]; r++) {
        const recipe_t *rc = &kRecipes[r];
        pagoda_quantize_options_t o;
        pagoda_quantize_options_default(&o);
        o.type = rc->type;
        o.threads = 2;
        pagoda_quantize_stats_t st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        const char *path = out_path(rc->file);
        TEST_ASSERT_OK(pagoda_model_quantize(SOURCE, path, &o, &st));
        struct stat file;
        assert_int_equal(stat(path, &file), 0);
        assert_int_equal((uint64_t)file.st_size, st.output_bytes);
        assert_true(st.output_bytes < st.input_bytes);
        assert_int_equal(st.tensors_kept, 17); /* 8 x 2 norms and the final norm */
        int n_expected = rc->types[1].name ? 2 : 1;
        assert_int_equal(st.n_types, n_expected);
        for (int t = 0; t < n_expected; t++) {
            assert_string_equal(st.types[t].name, rc->types[t].name);
            assert_int_equal(st.types[t].tensors, rc->types[t].tensors);
            assert_true(st.types[t].relative_rmse > 0);
            if (st.types[t].relative_rmse > rc->types[t].max_relative_rmse)
                fail_msg("%s: relative rmse %g", st.types[t].name, st.types[t].relative_rmse);
        }
        char partial[160];
        snprintf(partial, sizeof partial, "%s.partial", path);
        assert_false(file_exists(partial));
        greedy(path, ids, 8); /* it opens and generates */
        if (rc->type == PAGODA_QUANT_Q8_0) assert_memory_equal(ids, source_ids, sizeof ids);
    }
    /* Already quantized: refused, naming a tensor and the way out. */
    assert_int_equal(pagoda_model_quantize(out_path("q8_0.gguf"), out_path("again.gguf"), NULL, NULL),
                     PAGODA_ERR_UNSUPPORTED);
    assert_non_null(strstr(pagoda_last_error_message(), "already Q8_0"));
    assert_false(file_exists(out_path("again.gguf")));
}

/* `text` encoded by `a` and by `b` (all flags) gives the same ids. */
static void expect_same_ids(const pagoda_tokenizer_t *a, const pagoda_tokenizer_t *b, const char *text) {
    const uint32_t flags = PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL;
    int32_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    TEST_ASSERT_OK(pagoda_tokenizer_encode(a, text, strlen(text), flags, &x, &nx));
    TEST_ASSERT_OK(pagoda_tokenizer_encode(b, text, strlen(text), flags, &y, &ny));
    assert_int_equal(nx, ny);
    if (nx > 0) assert_memory_equal(x, y, nx * sizeof *x);
    pagoda_free(x);
    pagoda_free(y);
}

/* The folder and the GGUF of random model `name`, quantized to `type`: the file from the folder
 * tokenizes as the folder's tokenizer.json and generates as the file from the GGUF. */
static void check_hf_folder(const char *name, pagoda_quant_type_t type) {
    char folder[256], gguf[256];
    snprintf(folder, sizeof folder, "%s/%s/hf", PAGODA_RANDOM_MODELS_DIR, name);
    snprintf(gguf, sizeof gguf, "%s/%s/model.gguf", PAGODA_RANDOM_MODELS_DIR, name);
    pagoda_quantize_options_t o;
    pagoda_quantize_options_default(&o);
    o.type = type;
    o.threads = 2;
    const char *from_hf = out_path("from_hf.gguf"), *from_gguf = out_path("from_gguf.gguf");
    TEST_ASSERT_OK(pagoda_model_quantize(folder, from_hf, &o, NULL));
    TEST_ASSERT_OK(pagoda_model_quantize(gguf, from_gguf, &o, NULL));

    pagoda_model_t *model = NULL;
    pagoda_tokenizer_t *converted = NULL, *original = NULL;
    TEST_ASSERT_OK(pagoda_model_open(from_hf, NULL, &model));
    TEST_ASSERT_OK(pagoda_tokenizer_from_model(model, &converted));
    TEST_ASSERT_OK(pagoda_tokenizer_open(folder, &original));
    static const char *const texts[] = {"Once upon a time, there was a little girl", "Hello world!",
                                        "  two  spaces\tand\nlines", "Gr\xC3\xBC\xC3\x9F" "e \xF0\x9F\x9A\x80", ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) expect_same_ids(original, converted, texts[i]);
    pagoda_tokenizer_destroy(original);
    pagoda_tokenizer_destroy(converted);
    pagoda_model_destroy(model);

    int32_t a[8], b[8];
    greedy(from_hf, a, 8);
    greedy(from_gguf, b, 8);
    assert_memory_equal(a, b, sizeof a);
}

static void test_hf_folders(void **state) {
    (void)state;
    check_hf_folder("llama_256_f16", PAGODA_QUANT_Q4_K_M);  /* SentencePiece-style tokenizer */
    check_hf_folder("llama_bpe", PAGODA_QUANT_Q8_0);        /* Llama 3's byte-level BPE */
    check_hf_folder("qwen2_bpe", PAGODA_QUANT_Q4_0);        /* Qwen2's, with biases */
    check_hf_folder("qwen2_tied_f16", PAGODA_QUANT_Q8_0);   /* tied embeddings */
    check_hf_folder("llama_sharded_bf16", PAGODA_QUANT_Q6_K);  /* shards, Llama 3 RoPE scaling */

    /* A folder without tokenizer.json: refused, naming it, and nothing written. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s/broken' && rm '%s/broken/tokenizer.json'", HF_FOLDER, g_dir, g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(pagoda_model_quantize(out_path("broken"), out_path("broken.gguf"), NULL, NULL),
                     PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "tokenizer.json"));
    assert_false(file_exists(out_path("broken.gguf")));
}

static int cancel_at_third(void *user, float fraction, const char *stage) {
    (void)fraction;
    (void)stage;
    return ++*(int *)user < 3;
}

static void test_refusals_and_cancelling(void **state) {
    (void)state;
    pagoda_quantize_options_t o;
    pagoda_quantize_options_default(&o);
    assert_int_equal(o.type, PAGODA_QUANT_Q4_K_M);
    assert_int_equal(pagoda_model_quantize(NULL, out_path("x.gguf"), NULL, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_model_quantize(SOURCE, NULL, NULL, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    o.type = 99;
    assert_int_equal(pagoda_model_quantize(SOURCE, out_path("x.gguf"), &o, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "99"));
    pagoda_quantize_options_default(&o);
    o.threads = -1;
    assert_int_equal(pagoda_model_quantize(SOURCE, out_path("x.gguf"), &o, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    pagoda_quantize_stats_t st;
    memset(&st, 0, sizeof st);
    assert_int_equal(pagoda_model_quantize(SOURCE, out_path("x.gguf"), NULL, &st), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_model_quantize("/nonexistent/m.gguf", out_path("x.gguf"), NULL, NULL),
                     PAGODA_ERR_NOT_FOUND);
    assert_int_equal(pagoda_model_quantize(g_dir, out_path("x.gguf"), NULL, NULL), PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "config.json"));
    assert_int_equal(pagoda_model_quantize(SOURCE, "/nonexistent/dir/x.gguf", NULL, NULL), PAGODA_ERR_IO);
    assert_non_null(strstr(pagoda_last_error_message(), "/nonexistent/dir/x.gguf"));
    assert_false(file_exists(out_path("x.gguf")));

    /* Cancelled on the third tensor: CANCELLED, and neither the file nor its partial remain. */
    int calls = 0;
    pagoda_quantize_options_default(&o);
    o.progress = cancel_at_third;
    o.progress_user = &calls;
    assert_int_equal(pagoda_model_quantize(SOURCE, out_path("c.gguf"), &o, NULL), PAGODA_ERR_CANCELLED);
    assert_int_equal(calls, 3);
    assert_false(file_exists(out_path("c.gguf")));
    assert_false(file_exists(out_path("c.gguf.partial")));

    /* A host with an older, smaller stats struct gets only what it has room for. */
    memset(&st, 0xAB, sizeof st);
    st.struct_size = 32;
    pagoda_quantize_options_default(&o);
    o.type = PAGODA_QUANT_Q8_0;
    TEST_ASSERT_OK(pagoda_model_quantize(SOURCE, out_path("small.gguf"), &o, &st));
    assert_int_equal(st.struct_size, 32);
    assert_true(st.output_bytes > 0 && st.tensors_kept == 17);
    const unsigned char *bytes = (const unsigned char *)&st;
    for (size_t i = 32; i < sizeof st; i++) assert_int_equal(bytes[i], 0xAB);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_refusals_and_cancelling),
        cmocka_unit_test(test_hf_folders),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
