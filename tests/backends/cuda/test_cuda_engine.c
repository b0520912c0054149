/* The engine end to end on cuda:0 against the same engine on cpu:0, through the public API, on
 * the bundled stories260K: greedy tokens and their log-probabilities with the GPU's defaults
 * (decode steps as CUDA graphs, tokens picked on the device), then with bf16 activations, then
 * the model quantized to Q8_0 and Q4_0, then seeded draws on the device. The op-level
 * conformance test compares every kernel; this one catches what only the whole step shows
 * (graph replay over changing contexts, the device sampler's plumbing, activation types between
 * ops). Skipped without a CUDA device. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define CUDA_PLUGIN PAGODA_TEST_CUDA_BACKEND_DIR "/libpagoda-backend-cuda.so"
#define MODEL_PATH PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"
#define N_PROMPTS 8
#define N_TOKENS 32

static const char *const kPrompts[N_PROMPTS] = {
    "Once upon a time", "The little dog",   "Lily wanted to",   "The sun was",
    "She saw a",        "The cat",          "Ben",              "It was a sunny day. The",
};

/* What one engine wrote for every prompt. */
typedef struct run {
    int32_t tokens[N_PROMPTS][N_TOKENS];
    float logprobs[N_PROMPTS][N_TOKENS];
    pagoda_engine_stats_t stats;
} run_t;

static int g_no_device = 0;

/* Skips the calling test when the CUDA plugin finds no device. */
static void require_cuda(void) {
    static int loaded = 0;
    if (!loaded && !g_no_device) {
        /* The CPU backend too, from the default search path. */
        TEST_ASSERT_OK(pagoda_backends_discover(NULL, NULL));
        pagoda_backend_t *backend = NULL;
        pagoda_status_t s = pagoda_backend_load(CUDA_PLUGIN, NULL, &backend);
        if (s == PAGODA_OK) {
            loaded = 1;
        } else if ((s == PAGODA_ERR_NOT_FOUND || s == PAGODA_ERR_BACKEND) && strstr(pagoda_last_error_message(), "no CUDA device")) {
            fprintf(stderr, "skipping: %s\n", pagoda_last_error_message());
            g_no_device = 1;
        } else {
            fail_msg("loading %s: %s: %s", CUDA_PLUGIN, pagoda_status_string(s),
                     pagoda_last_error_message());
        }
    }
    if (g_no_device) skip();
}

/* Runs every prompt at once with the model at `path` on `device` with the request options `ro`
 * (seed offset by the prompt's index when `vary_seed`), the engine options `eo` and a KV cache
 * of `cache_dtype` (PAGODA_DTYPE_INVALID: the device's default, f16 on a GPU), to N_TOKENS
 * tokens each. */
static void generate_with(const char *path, const char *device, const pagoda_engine_options_t *eo,
                          pagoda_request_options_t ro, int vary_seed, pagoda_dtype_t cache_dtype,
                          run_t *out) {
    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &model));
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = device;
    TEST_ASSERT_OK(pagoda_mesh_create(&mo, &mesh));
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = 256;
    ko.block_size = 16;
    ko.dtype = cache_dtype;
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, &ko, &cache));
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, eo, &engine));

    uint64_t ids[N_PROMPTS];
    size_t got[N_PROMPTS] = {0};
    ro.max_tokens = N_TOKENS;
    ro.logprobs = 0;
    ro.flags = PAGODA_REQUEST_IGNORE_EOS;
    const uint64_t seed = ro.seed;
    for (int i = 0; i < N_PROMPTS; i++) {
        ro.seed = vary_seed ? seed + (uint64_t)i : seed;
        TEST_ASSERT_OK(pagoda_engine_submit_text(engine, kPrompts[i], strlen(kPrompts[i]), &ro,
                                                 &ids[i]));
    }
    for (int steps = 0; pagoda_engine_has_work(engine); steps++) {
        assert_true(steps < 1000);
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        while (pagoda_engine_poll(engine, &o) == PAGODA_OK) {
            int i = 0;
            while (i < N_PROMPTS && ids[i] != o.request_id) i++;
            assert_true(i < N_PROMPTS);
            assert_int_not_equal(o.finish_reason, PAGODA_FINISH_ERROR);
            assert_true(got[i] + o.n_tokens <= N_TOKENS);
            memcpy(&out->tokens[i][got[i]], o.token_ids, o.n_tokens * sizeof(int32_t));
            memcpy(&out->logprobs[i][got[i]], o.logprobs, o.n_tokens * sizeof(float));
            got[i] += o.n_tokens;
        }
    }
    for (int i = 0; i < N_PROMPTS; i++) assert_int_equal(got[i], N_TOKENS);
    memset(&out->stats, 0, sizeof out->stats);
    out->stats.struct_size = sizeof out->stats;
    TEST_ASSERT_OK(pagoda_engine_get_stats(engine, &out->stats));
    pagoda_kv_cache_stats_t ks;
    memset(&ks, 0, sizeof ks);
    ks.struct_size = sizeof ks;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &ks));
    assert_int_equal(ks.blocks_used, 0);
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

/* generate_with on the bundled stories260K. */
static void generate(const char *device, const pagoda_engine_options_t *eo,
                     pagoda_request_options_t ro, int vary_seed, pagoda_dtype_t cache_dtype,
                     run_t *out) {
    generate_with(MODEL_PATH, device, eo, ro, vary_seed, cache_dtype, out);
}

/* Tokens equal to the CPU's and log-probabilities within `tolerance`, counted; fails below
 * `min_share` equal tokens. A sequence whose token differs may drift afterwards. */
static void compare(const char *what, const run_t *gpu, const run_t *cpu, double min_share,
                    double tolerance) {
    int same = 0;
    double worst = 0.0;
    for (int i = 0; i < N_PROMPTS; i++)
        for (int t = 0; t < N_TOKENS; t++) {
            if (gpu->tokens[i][t] != cpu->tokens[i][t]) continue;
            same++;
            const double d = fabs((double)gpu->logprobs[i][t] - (double)cpu->logprobs[i][t]);
            if (d > worst) worst = d;
        }
    printf("%s: %d of %d greedy tokens as on the CPU, log-probabilities within %.3g\n", what,
           same, N_PROMPTS * N_TOKENS, worst);
    assert_true(same >= (int)(min_share * N_PROMPTS * N_TOKENS));
    assert_true(worst <= tolerance);
}

static pagoda_request_options_t greedy(void) {
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.0f;
    return ro;
}

static void test_greedy_matches_cpu(void **state) {
    (void)state;
    require_cuda();
    static run_t cpu, gpu, bf16;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    /* f32 throughout, caches too (a GPU's default f16 cache moved log-probabilities by 3.6e-3 on
     * this model, measured on an H200), so the tolerance measures the kernels alone. */
    generate("cpu:0", &eo, greedy(), 0, PAGODA_DTYPE_F32, &cpu);
    generate("cuda:0", &eo, greedy(), 0, PAGODA_DTYPE_F32, &gpu);
    /* The GPU's defaults took effect: graphs replayed, every token picked on the device. */
    assert_true(gpu.stats.graph_steps > 0);
    assert_int_equal(gpu.stats.device_sampled_tokens, gpu.stats.generated_tokens);
    compare("f32 activations", &gpu, &cpu, 0.95, 1e-3);

    eo.activation_dtype = PAGODA_DTYPE_BF16;
    generate("cuda:0", &eo, greedy(), 0, PAGODA_DTYPE_INVALID, &bf16);
    compare("bf16 activations", &bf16, &cpu, 0.8, 0.1);
}

/* stories260K quantized by the public API to Q8_0 and to Q4_0 (its 64-wide rows take 32-value
 * blocks; the K types' 256 do not fit, so Q4_0's Q6_K output stays f32): the CUDA backend's
 * block GEMV, panel decoding and block embedding rows against the CPU's exact f32 products
 * (PAGODA_QUANTIZED_MATMUL_EXACT: no 8-bit activations), caches f32 on both; then the GPU's
 * defaults (f16 activations, weights rounded to f16 for batched products), within what f16
 * activations allow. */
static void test_quantized_matches_cpu(void **state) {
    (void)state;
    require_cuda();
    static const struct {
        pagoda_quant_type_t type;
        const char *name;
    } kTypes[] = {{PAGODA_QUANT_Q8_0, "q8_0"}, {PAGODA_QUANT_Q4_0, "q4_0"}};
    char dir[] = "/tmp/pagoda_cuda_quant_XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, kTypes[i].name);
        pagoda_quantize_options_t qo;
        pagoda_quantize_options_default(&qo);
        qo.type = kTypes[i].type;
        TEST_ASSERT_OK(pagoda_model_quantize(MODEL_PATH, path, &qo, NULL));
        static run_t cpu, gpu;
        pagoda_engine_options_t eo;
        pagoda_engine_options_default(&eo);
        eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
        generate_with(path, "cpu:0", &eo, greedy(), 0, PAGODA_DTYPE_F32, &cpu);
        generate_with(path, "cuda:0", &eo, greedy(), 0, PAGODA_DTYPE_F32, &gpu);
        compare(kTypes[i].name, &gpu, &cpu, 0.95, 1e-3);
        pagoda_engine_options_t defaults;
        pagoda_engine_options_default(&defaults);
        generate_with(path, "cuda:0", &defaults, greedy(), 0, PAGODA_DTYPE_INVALID, &gpu);
        assert_int_equal(gpu.stats.device_sampled_tokens, gpu.stats.generated_tokens);
        compare("the GPU's defaults", &gpu, &cpu, 0.8, 0.1);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

static void test_seeded_draws_repeat(void **state) {
    (void)state;
    require_cuda();
    static run_t a, b;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.9f;
    ro.top_k = 40;
    ro.top_p = 0.95f;
    ro.seed = 77;
    generate("cuda:0", &eo, ro, 1, PAGODA_DTYPE_INVALID, &a);
    generate("cuda:0", &eo, ro, 1, PAGODA_DTYPE_INVALID, &b);
    assert_memory_equal(a.tokens, b.tokens, sizeof a.tokens);
    assert_int_equal(a.stats.device_sampled_tokens, a.stats.generated_tokens);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_matches_cpu),
        cmocka_unit_test(test_quantized_matches_cpu),
        cmocka_unit_test(test_seeded_draws_repeat),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed == 0 && g_no_device ? 77 : failed; /* ctest reports a skip */
}
