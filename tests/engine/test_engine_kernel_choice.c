/* Kernel choice by measurement (kernel_choice.h) through the public API, on the width-256 test
 * model quantized to Q8_0, where the CPU backend's variants differ visibly: its int8 route
 * (gemv_int8) rounds the activations, its float GEMV (gemv) does not. With the default AUTO
 * products, the rules take the int8 route for these few-row steps; EXACT takes the float GEMV.
 *
 * - MEASURE times every product shape up to max_num_batched_tokens and writes the file; FILE
 *   reads it back unchanged; RULES ignores it.
 * - A pinned file decides what runs: "gemv" everywhere gives EXACT's log-probabilities bit for
 *   bit under AUTO, "gemv_int8" everywhere gives AUTO's rules' ones.
 * - Bad files and options are refused by name: an unknown variant, one the backend refuses for
 *   the entry's shape, malformed JSON, a missing file, an unknown mode.
 * - On a tp=2 mesh, MEASURE tunes each device's shard and the mesh serves with the choices. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define PROMPT_LEN 6
#define GENERATED 8

typedef struct run_result {
    int32_t tokens[GENERATED];
    float logprobs[GENERATED];
    size_t n;
} run_result_t;

typedef struct fixture {
    char dir[64];
    char model_path[128];
    char choices_path[128];
    pagoda_model_t *model;
} fixture_t;

static fixture_t fx;

static int setup(void **state) {
    (void)state;
    snprintf(fx.dir, sizeof fx.dir, "/tmp/pagoda_kernel_choice_XXXXXX");
    if (mkdtemp(fx.dir) == NULL) return -1;
    snprintf(fx.model_path, sizeof fx.model_path, "%s/q8_0.gguf", fx.dir);
    snprintf(fx.choices_path, sizeof fx.choices_path, "%s/choices.json", fx.dir);
    pagoda_quantize_options_t o;
    pagoda_quantize_options_default(&o);
    o.type = PAGODA_QUANT_Q8_0;
    if (pagoda_model_quantize(PAGODA_MESH_MODELS_DIR "/q256/model.gguf", fx.model_path, &o, NULL) !=
        PAGODA_OK)
        return -1;
    return pagoda_model_open(fx.model_path, NULL, &fx.model) == PAGODA_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    pagoda_model_destroy(fx.model);
    remove(fx.model_path);
    remove(fx.choices_path);
    rmdir(fx.dir);
    return 0;
}

static void default_options(pagoda_engine_options_t *eo) {
    pagoda_engine_options_default(eo);
    eo->max_num_batched_tokens = 16;
}

/* Creates an engine on `devices` (cpu:0, or a tp=2 mesh) with `eo`; returns its status and
 * leaves the handles in the out-parameters (NULL on failure). */
static pagoda_status_t open_engine(const char *devices, const char *axes,
                                   const pagoda_engine_options_t *eo, pagoda_mesh_t **mesh,
                                   pagoda_kv_cache_t **cache, pagoda_engine_t **engine) {
    *mesh = test_mesh(devices, axes);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = 16;
    TEST_ASSERT_OK(pagoda_kv_cache_create(fx.model, *mesh, NULL, &ko, cache));
    *engine = NULL;
    return pagoda_engine_create(fx.model, *mesh, NULL, *cache, eo, engine);
}

static void close_engine(pagoda_mesh_t *mesh, pagoda_kv_cache_t *cache, pagoda_engine_t *engine) {
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
}

/* One greedy request: its tokens and their log-probabilities. */
static void generate(pagoda_engine_t *engine, run_result_t *r) {
    memset(r, 0, sizeof *r);
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.0f;
    ro.logprobs = 0;
    ro.max_tokens = GENERATED;
    ro.flags = PAGODA_REQUEST_IGNORE_EOS;
    const int32_t prompt[PROMPT_LEN] = {1, 17, 42, 99, 5, 64};
    uint64_t id;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(engine, prompt, PROMPT_LEN, &ro, &id));
    int steps = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            assert_int_equal(out.status, PAGODA_OK);
            for (size_t i = 0; i < out.n_tokens && r->n < GENERATED; ++i, ++r->n) {
                r->tokens[r->n] = out.token_ids[i];
                r->logprobs[r->n] = out.logprobs[i];
            }
        }
        assert_true(++steps < 100);
    }
    assert_int_equal(r->n, GENERATED);
}

/* Generates on cpu:0 with `eo`. */
static void run(const pagoda_engine_options_t *eo, run_result_t *r) {
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    TEST_ASSERT_OK(open_engine("cpu:0", NULL, eo, &mesh, &cache, &engine));
    generate(engine, r);
    close_engine(mesh, cache, engine);
}

static float worst_difference(const run_result_t *a, const run_result_t *b) {
    float worst = 0.0f;
    for (size_t i = 0; i < GENERATED; ++i) {
        assert_int_equal(a->tokens[i], b->tokens[i]);
        worst = fmaxf(worst, fabsf(a->logprobs[i] - b->logprobs[i]));
    }
    return worst;
}

static pagoda_kernel_choice_info_t entry(const pagoda_engine_t *engine, size_t i) {
    pagoda_kernel_choice_info_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    TEST_ASSERT_OK(pagoda_engine_kernel_choice(engine, i, &c));
    return c;
}

static int is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* The device kind cpu:0 is keyed by, from a measured table. */
static void device_kind(char *out, size_t size) {
    pagoda_engine_options_t eo;
    default_options(&eo);
    eo.max_num_batched_tokens = 1;
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_MEASURE;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    TEST_ASSERT_OK(open_engine("cpu:0", NULL, &eo, &mesh, &cache, &engine));
    snprintf(out, size, "%s", entry(engine, 0).device);
    close_engine(mesh, cache, engine);
}

/* The model's product shapes (n, k): q and o; k, v and the LM head; gate and up; down. */
static const int64_t kShapes[][2] = {{256, 256}, {128, 256}, {512, 256}, {256, 512}};

/* A file pinning `variant` for every product at 1..16 rows, under AUTO's flags. */
static void write_pinned(const char *kind, const char *variant, unsigned flags) {
    FILE *f = fopen(fx.choices_path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"pagoda-kernel-choices\", \"version\": 1, \"choices\": [", f);
    const char *sep = "";
    for (size_t s = 0; s < 4; ++s)
        for (int64_t m = 1; m <= 16; m *= 2) {
            fprintf(f,
                    "%s{\"device\": \"%s\", \"op\": \"matmul\", \"w\": \"q8_0\", \"x\": \"f32\", "
                    "\"y\": \"f32\", \"flags\": %u, \"n\": %lld, \"k\": %lld, \"m\": %lld, "
                    "\"variant\": \"%s\"}",
                    sep, kind, flags, (long long)kShapes[s][0], (long long)kShapes[s][1],
                    (long long)m, variant);
            sep = ", ";
        }
    fputs("]}\n", f);
    assert_int_equal(fclose(f), 0);
}

static void test_measure_then_read_back(void **state) {
    (void)state;
    remove(fx.choices_path);
    pagoda_engine_options_t eo;
    default_options(&eo);
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_MEASURE;
    eo.kernel_choices_file = fx.choices_path;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    TEST_ASSERT_OK(open_engine("cpu:0", NULL, &eo, &mesh, &cache, &engine));
    size_t count = 0;
    TEST_ASSERT_OK(pagoda_engine_kernel_choice_count(engine, &count));
    /* Four distinct layer shapes and the LM head (128 x 256, as k and v), at 1..16 rows. */
    assert_int_equal(count, 4 * 5);
    pagoda_kernel_choice_info_t measured[20];
    for (size_t i = 0; i < count; ++i) {
        measured[i] = entry(engine, i);
        const pagoda_kernel_choice_info_t *c = &measured[i];
        assert_true(is_power_of_two(c->m) && c->m <= 16);
        assert_int_equal(c->w_dtype, PAGODA_DTYPE_Q8_0);
        assert_int_equal(c->flags, PAGODA_MATMUL_QUANTIZE_X);
        assert_true(c->seconds > 0.0 && c->rules_seconds > 0.0);
        assert_true(c->seconds <= c->rules_seconds);
        assert_non_null(strstr(c->device, "cpu / "));
        assert_true(strcmp(c->variant, "rules") == 0 || strcmp(c->variant, "gemv") == 0 ||
                    strcmp(c->variant, "gemv_int8") == 0 || strcmp(c->variant, "sgemm") == 0);
    }
    pagoda_kernel_choice_info_t bad;
    memset(&bad, 0, sizeof bad);
    bad.struct_size = sizeof bad;
    test_expect_failure(pagoda_engine_kernel_choice(engine, count, &bad), PAGODA_ERR_INVALID_ARGUMENT,
                        "out of range");
    run_result_t with_measured;
    generate(engine, &with_measured);
    close_engine(mesh, cache, engine);

    /* FILE reads the same table; RULES reads nothing. */
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_FILE;
    TEST_ASSERT_OK(open_engine("cpu:0", NULL, &eo, &mesh, &cache, &engine));
    TEST_ASSERT_OK(pagoda_engine_kernel_choice_count(engine, &count));
    assert_int_equal(count, 20);
    for (size_t i = 0; i < count; ++i) {
        const pagoda_kernel_choice_info_t c = entry(engine, i);
        assert_string_equal(c.variant, measured[i].variant);
        assert_int_equal(c.n, measured[i].n);
        assert_int_equal(c.m, measured[i].m);
        assert_true(fabs(c.seconds - measured[i].seconds) <= 1e-6 * measured[i].seconds);
    }
    run_result_t read_back;
    generate(engine, &read_back);
    assert_true(worst_difference(&with_measured, &read_back) == 0.0f);
    close_engine(mesh, cache, engine);
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_RULES;
    TEST_ASSERT_OK(open_engine("cpu:0", NULL, &eo, &mesh, &cache, &engine));
    TEST_ASSERT_OK(pagoda_engine_kernel_choice_count(engine, &count));
    assert_int_equal(count, 0);
    close_engine(mesh, cache, engine);
}

static void test_pinned_variants_decide(void **state) {
    (void)state;
    char kind[192];
    device_kind(kind, sizeof kind);
    pagoda_engine_options_t eo;
    default_options(&eo);
    run_result_t rules_auto, rules_exact, pinned_float, pinned_int8;
    run(&eo, &rules_auto);
    eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    run(&eo, &rules_exact);
    /* The two rules differ (the int8 route rounds x)... */
    const float apart = worst_difference(&rules_auto, &rules_exact);
    printf("  AUTO vs EXACT rules: worst |d logprob| %.2e\n", (double)apart);
    assert_true(apart > 1e-5f);

    /* ...and a pinned file picks either under AUTO. */
    default_options(&eo);
    eo.kernel_choices_file = fx.choices_path;
    write_pinned(kind, "gemv", PAGODA_MATMUL_QUANTIZE_X);
    run(&eo, &pinned_float);
    assert_true(worst_difference(&pinned_float, &rules_exact) == 0.0f);
    write_pinned(kind, "gemv_int8", PAGODA_MATMUL_QUANTIZE_X);
    run(&eo, &pinned_int8);
    assert_true(worst_difference(&pinned_int8, &rules_auto) == 0.0f);

    /* Entries for another kind of device are kept but change nothing. */
    write_pinned("cpu / elsewhere / 64 units", "gemv", PAGODA_MATMUL_QUANTIZE_X);
    run(&eo, &pinned_float);
    assert_true(worst_difference(&pinned_float, &rules_auto) == 0.0f);
}

static void expect_refused(const pagoda_engine_options_t *eo, pagoda_status_t want, const char *needle) {
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    pagoda_clear_error();
    test_expect_failure(open_engine("cpu:0", NULL, eo, &mesh, &cache, &engine), want, needle);
    assert_null(engine);
    close_engine(mesh, cache, engine);
}

static void test_bad_files_and_options(void **state) {
    (void)state;
    char kind[192];
    device_kind(kind, sizeof kind);
    pagoda_engine_options_t eo;
    default_options(&eo);
    eo.kernel_choices_file = fx.choices_path;
    write_pinned(kind, "tiled_gemm", PAGODA_MATMUL_QUANTIZE_X);
    expect_refused(&eo, PAGODA_ERR_INVALID_ARGUMENT, "names variant 'tiled_gemm', which cpu:0 does not have");
    /* The int8 route without the leave to round x. */
    write_pinned(kind, "gemv_int8", 0);
    expect_refused(&eo, PAGODA_ERR_INVALID_ARGUMENT, "refuses for that shape");

    FILE *f = fopen(fx.choices_path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"pagoda-kernel-choices\", \"version\": 1, \"choices\": [{\"device\": \"x\"", f);
    assert_int_equal(fclose(f), 0);
    expect_refused(&eo, PAGODA_ERR_FORMAT, "choices.json");
    f = fopen(fx.choices_path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"pagoda-kernel-choices\", \"version\": 1, \"choices\": [{\"device\": \"x\", "
          "\"op\": \"matmul\", \"w\": \"q8_0\", \"x\": \"f32\", \"y\": \"f32\", \"flags\": 0, "
          "\"n\": 8, \"k\": 32, \"m\": 3, \"variant\": \"gemv\"}]}",
          f);
    assert_int_equal(fclose(f), 0);
    expect_refused(&eo, PAGODA_ERR_FORMAT, "choices[0]: \"m\" = 3 is not a power of two");

    remove(fx.choices_path);
    expect_refused(&eo, PAGODA_ERR_NOT_FOUND, "choices.json");
    eo.kernel_choices_file = "";
    expect_refused(&eo, PAGODA_ERR_INVALID_ARGUMENT, "kernel_choices_file is empty");
    eo.kernel_choices_file = NULL;
    eo.kernel_choice = 3;
    expect_refused(&eo, PAGODA_ERR_INVALID_ARGUMENT, "kernel_choice must be");
}

/* Each device of a tp=2 mesh measures its own shard's shapes (halved n or k), one after the
 * other; the mesh then serves as it does on the rules, within the variants' rounding. */
static void test_mesh_measures_each_shard(void **state) {
    (void)state;
    remove(fx.choices_path);
    pagoda_engine_options_t eo;
    default_options(&eo);
    eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_MEASURE;
    eo.kernel_choices_file = fx.choices_path;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    TEST_ASSERT_OK(open_engine("cpu:0-1", "tp=2", &eo, &mesh, &cache, &engine));
    size_t count = 0;
    TEST_ASSERT_OK(pagoda_engine_kernel_choice_count(engine, &count));
    int halved = 0;
    for (size_t i = 0; i < count; ++i) {
        const pagoda_kernel_choice_info_t c = entry(engine, i);
        assert_int_equal(c.flags, 0);
        if ((c.n == 128 && c.k == 256) || (c.n == 256 && c.k == 128) || (c.n == 64 && c.k == 256))
            halved = 1;
    }
    assert_true(count > 0);
    assert_true(halved);
    run_result_t tuned, rules;
    generate(engine, &tuned);
    close_engine(mesh, cache, engine);
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_RULES;
    TEST_ASSERT_OK(open_engine("cpu:0-1", "tp=2", &eo, &mesh, &cache, &engine));
    generate(engine, &rules);
    close_engine(mesh, cache, engine);
    assert_true(worst_difference(&tuned, &rules) < 1e-4f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure_then_read_back),
        cmocka_unit_test(test_pinned_variants_decide),
        cmocka_unit_test(test_bad_files_and_options),
        cmocka_unit_test(test_mesh_measures_each_shard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
