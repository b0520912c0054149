/* The engine on meshes of CPU devices (the CPU backend loaded with several logical devices,
 * PAGODA_BACKEND_CPU_CONFIG), through the public API: every layout gives the one-device run's
 * greedy tokens and, within 1e-4, its log-probabilities, on a workload of mixed requests under
 * continuous batching, chunked prefill, preemption by recompute and by swap, prefix-cache hits,
 * parallel sampling, beam search and logit controls (mesh_run.c); each device holds its share
 * of the weights and of the KV cache; a plan that does not fit is refused by name. Cache
 * parallelism (kvp) splits every KV block into runs held by different devices; its runs keep
 * the one-device run's block size. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh_run.h"
#include "test_util.h"

typedef struct layout {
    const char *devices;
    const char *axes;
} layout_t;

static const layout_t kLayouts[] = {
    {"cpu:0-1", "tp=2"},      {"cpu:0-3", "tp=4"},  {"cpu:0-1", "pp=2"},
    {"cpu:0-2", "pp=3"},      {"cpu:0-3", "pp=2,tp=2"}, {"cpu:0-1", "kvp=2"},
    {"cpu:0-3", "kvp=2,tp=2"}, {"cpu:0-3", "pp=2,kvp=2"},
    /* A mixture of experts' experts split whole over groups of devices. */
    {"cpu:0-1", "ep=2"},      {"cpu:0-3", "ep=4"},  {"cpu:0-3", "ep=2,tp=2"},
    {"cpu:0-3", "pp=2,ep=2"}, {"cpu:0-3", "ep=2,kvp=2"},
};

/* Every layout against one device, under `how`, on the model at `path`. `max_tp` skips the
 * layouts a model's heads cannot split into, and the ep layouts run on mixtures of experts. */
static void layouts_match_one_device(const char *path, const serving_t *how, int max_tp, int experts) {
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &model));
    run_result_t *alone = test_xcalloc(1, sizeof *alone), *meshed = test_xcalloc(1, sizeof *meshed);
    pagoda_mesh_t *one = test_mesh("cpu:0", NULL);
    run_on(model, one, NULL, how, submit_workload, alone);
    pagoda_mesh_destroy(one);
    /* The workload exercises what it should: preemption, prefix-cache hits, chunked prompts. */
    assert_true(how->preemption == PAGODA_PREEMPT_SWAP ? alone->stats.preemptions_swap > 0
                                                       : alone->stats.preemptions_recompute > 0);
    assert_true(alone->kv.prefix_hits > 0);
    for (size_t i = 0; i < sizeof kLayouts / sizeof kLayouts[0]; ++i) {
        if ((strstr(kLayouts[i].axes, "tp=4") && max_tp < 4) || (strstr(kLayouts[i].axes, "tp=2") && max_tp < 2) ||
            (strstr(kLayouts[i].axes, "ep=") && !experts))
            continue;
        pagoda_mesh_t *mesh = test_mesh(kLayouts[i].devices, kLayouts[i].axes);
        /* Under kvp=2 a block is two runs of block_size tokens: halving the option keeps the
         * cache's blocks, and so the schedule (chunks, preemptions), what the device's was. */
        serving_t same = *how;
        if (strstr(kLayouts[i].axes, "kvp=2")) same.block_size = how->block_size / 2;
        run_on(model, mesh, NULL, &same, submit_workload, meshed);
        char what[96];
        snprintf(what, sizeof what, "%s %s", kLayouts[i].axes, how->preemption == PAGODA_PREEMPT_SWAP ? "(swap)" : "");
        expect_same(alone, meshed, what);
        pagoda_mesh_destroy(mesh);
    }
    free(alone);
    free(meshed);
    pagoda_model_destroy(model);
}

/* A small cache (preemption), a small step budget (chunked prefill), 4-token blocks. */
static const serving_t kTight = {48, 4, 40, PAGODA_PREEMPT_RECOMPUTE, PAGODA_QUANTIZED_MATMUL_AUTO};
static const serving_t kTightSwap = {48, 4, 40, PAGODA_PREEMPT_SWAP, PAGODA_QUANTIZED_MATMUL_AUTO};

static void test_stories_layouts(void **state) {
    (void)state;
    layouts_match_one_device(STORIES, &kTight, 4, 0);
}

static void test_stories_layouts_swap(void **state) {
    (void)state;
    layouts_match_one_device(STORIES, &kTightSwap, 4, 0);
}

static void test_gqa_layouts(void **state) {
    (void)state;
    /* 4 query heads over 2 KV heads: tp=2 splits the KV heads, tp=4 replicates each twice. */
    layouts_match_one_device(PAGODA_MESH_MODELS_DIR "/gqa/hf", &kTight, 4, 0);
}

static void test_moe_layouts(void **state) {
    (void)state;
    /* Qwen3-MoE-shaped, 8 experts of 32 columns, 2 per token: every layout, ep ones included,
     * through preemption, prefix hits and chunked prompts (the GGUF's stacked experts). */
    layouts_match_one_device(PAGODA_MESH_MODELS_DIR "/moe/model.gguf", &kTight, 4, 1);
}

static void test_mqa_layouts(void **state) {
    (void)state;
    /* One KV head: every tensor-parallel rank holds a copy (tp > n_kv_heads); a vocabulary of 99
     * does not split over tp ranks, so the tied LM head is replicated. */
    layouts_match_one_device(PAGODA_MESH_MODELS_DIR "/mqa/hf", &kTight, 4, 0);
}

/* Quantizes the width-256 test model to Q4_K_M at `path` (in a fresh folder `dir`). */
static void quantize_q256(char *dir, char *path, size_t path_size) {
    assert_non_null(mkdtemp(dir));
    snprintf(path, path_size, "%s/q4_k_m.gguf", dir);
    pagoda_quantize_options_t o;
    pagoda_quantize_options_default(&o);
    o.type = PAGODA_QUANT_Q4_K_M;
    TEST_ASSERT_OK(pagoda_model_quantize(PAGODA_MESH_MODELS_DIR "/q256/model.gguf", path, &o, NULL));
}

/* The Q4_K_M mix on every layout. One device keeps every weight quantized; a shard whose
 * columns are not whole blocks is widened to f32 (tp=2 cuts o_proj's 256-value Q4_K blocks in
 * half, tp=4 also ffn_down's), the others stay quantized: tokens and log-probabilities match.
 * Exact products: a widened shard never rounds its activations to 8 bits, so under AUTO the
 * layouts would differ by that rounding (about 1e-2 in log-probability here). */
static void test_quantized_layouts(void **state) {
    (void)state;
    char dir[] = "/tmp/pagoda_mesh_quant_XXXXXX";
    char path[sizeof dir + 16];
    quantize_q256(dir, path, sizeof path);
    serving_t exact = kTight;
    exact.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    layouts_match_one_device(path, &exact, 4, 0);
    assert_int_equal(remove(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* One greedy request of a 12-token prompt, 24 tokens with their log-probabilities. */
static size_t submit_one_greedy(pagoda_engine_t *engine, int32_t vocab) {
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.0f;
    ro.logprobs = 0;
    ro.max_tokens = 24;
    ro.flags = PAGODA_REQUEST_IGNORE_EOS;
    int32_t prompt[12];
    make_prompt(prompt, 12, 0, 7, 1, vocab);
    uint64_t id;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(engine, prompt, 12, &ro, &id));
    return 1;
}

/* PAGODA_QUANTIZED_MATMUL_AUTO (the default) rounds the activations of one-row products to 8
 * bits on the CPU backend (the decode steps, and the LM head of the prefill's last row), EXACT
 * does not: the log-probabilities move, by far less than the weights' own quantization moves
 * them, while the greedy tokens agree. */
static void test_quantized_activations(void **state) {
    (void)state;
    char dir[] = "/tmp/pagoda_mesh_q8x_XXXXXX";
    char path[sizeof dir + 16];
    quantize_q256(dir, path, sizeof path);
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &model));
    run_result_t *exact = test_xcalloc(1, sizeof *exact), *q8x = test_xcalloc(1, sizeof *q8x);
    pagoda_mesh_t *one = test_mesh("cpu:0", NULL);
    serving_t how = kTight;
    how.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    run_on(model, one, NULL, &how, submit_one_greedy, exact);
    how.quantized_matmul = PAGODA_QUANTIZED_MATMUL_AUTO;
    run_on(model, one, NULL, &how, submit_one_greedy, q8x);
    const sequence_result_t *a = &exact->seqs[0][0], *b = &q8x->seqs[0][0];
    assert_int_equal(a->n, 24);
    assert_int_equal(b->n, 24);
    float worst = 0.0f;
    size_t i = 0;
    for (; i < 24 && a->tokens[i] == b->tokens[i]; ++i) {
        const float d = fabsf(a->logprobs[i] - b->logprobs[i]);
        if (d > worst) worst = d;
    }
    printf("  8-bit activations: the first %zu tokens agree, worst |d logprob| %.2e\n", i,
           (double)worst);
    assert_true(i >= 4);  /* random weights: near-flat distributions, so ties break apart soon */
    assert_true(worst > 0.0f);
    assert_true(worst < 0.05f);
    pagoda_mesh_destroy(one);
    free(exact);
    free(q8x);
    pagoda_model_destroy(model);
    assert_int_equal(remove(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* tp=2 halves the layers' weights and the KV heads per device; pp=2 halves the layers. */
static void test_memory_per_device(void **state) {
    (void)state;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(PAGODA_MESH_MODELS_DIR "/gqa/hf", NULL, &model));
    const serving_t how = {64, 16, 256, PAGODA_PREEMPT_AUTO, PAGODA_QUANTIZED_MATMUL_AUTO};
    const char *axes[] = {NULL, "tp=2", "pp=2"};
    const char *devices[] = {"cpu:0", "cpu:0-1", "cpu:0-1"};
    pagoda_device_stats_t whole;
    memset(&whole, 0, sizeof whole);
    for (int k = 0; k < 3; ++k) {
        pagoda_mesh_t *mesh = test_mesh(devices[k], axes[k]);
        pagoda_kv_cache_options_t ko;
        pagoda_kv_cache_options_default(&ko);
        ko.num_blocks = how.num_blocks;
        pagoda_kv_cache_t *cache = NULL;
        TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, &ko, &cache));
        pagoda_engine_t *engine = NULL;
        TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine));
        size_t n = pagoda_engine_device_count(engine);
        assert_int_equal(n, k == 0 ? 1 : 2);
        for (size_t d = 0; d < n; ++d) {
            pagoda_device_stats_t st;
            memset(&st, 0, sizeof st);
            st.struct_size = sizeof st;
            TEST_ASSERT_OK(pagoda_engine_get_device_stats(engine, d, &st));
            printf("  %-6s %-8s stage %d tp %d/%d layers %lld-%lld kv heads %lld: weights %llu B, KV %llu B\n",
                   axes[k] ? axes[k] : "one", st.device, st.stage, st.tp_rank, st.tp_size,
                   (long long)st.first_layer, (long long)st.end_layer - 1, (long long)st.kv_heads,
                   (unsigned long long)st.weight_bytes, (unsigned long long)st.kv_bytes);
            if (k == 0) {
                whole = st;
                continue;
            }
            /* Half the decoder layers' weights (norms are replicated: within 5 %) and exactly
             * half the KV bytes: half the heads (tp) or half the layers (pp). */
            double ratio = (double)st.layer_weight_bytes / (double)whole.layer_weight_bytes;
            printf("    layer weights %.3f of one device's, KV %.3f\n", ratio,
                   (double)st.kv_bytes / (double)whole.kv_bytes);
            assert_true(fabs(ratio - 0.5) <= 0.025);
            assert_int_equal(st.kv_bytes * 2, whole.kv_bytes);
            if (k == 2)
                assert_int_equal(st.end_layer - st.first_layer, 2);
            else
                assert_int_equal(st.kv_heads * 2, whole.kv_heads);
        }
        pagoda_device_stats_t bad;
        bad.struct_size = sizeof bad;
        test_expect_failure(pagoda_engine_get_device_stats(engine, n, &bad), PAGODA_ERR_INVALID_ARGUMENT,
                            "out of range");
        pagoda_engine_destroy(engine);
        pagoda_kv_cache_destroy(cache);
        pagoda_mesh_destroy(mesh);
    }
    pagoda_model_destroy(model);
}

/* Plans that do not fit are refused with the mismatch named. */
static void test_plan_mismatches(void **state) {
    (void)state;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(STORIES, NULL, &model));
    pagoda_mesh_t *two = test_mesh("cpu:0-1", "tp=2");
    pagoda_kv_cache_t *cache = NULL;

    /* A plan for two stages on a mesh whose axes say one. */
    pagoda_plan_options_t po;
    pagoda_plan_options_default(&po);
    po.stages = 2;
    pagoda_plan_t *pp2 = NULL;
    TEST_ASSERT_OK(pagoda_plan_create(model, two, &po, &pp2));
    test_expect_failure(pagoda_kv_cache_create(model, two, pp2, NULL, &cache), PAGODA_ERR_INVALID_ARGUMENT,
                        "pp=");
    /* The same plan on four devices: the device count differs. */
    pagoda_mesh_t *four = test_mesh("cpu:0-3", NULL);
    test_expect_failure(pagoda_kv_cache_create(model, four, pp2, NULL, &cache), PAGODA_ERR_INVALID_ARGUMENT,
                        "devices");
    /* A plan made from another model's configuration. */
    pagoda_plan_options_t other;
    pagoda_plan_options_default(&other);
    other.mesh_shape = "1x2";
    pagoda_plan_t *foreign = NULL;
    TEST_ASSERT_OK(pagoda_plan_create_from_config(PAGODA_MESH_MODELS_DIR "/gqa/hf/config.json", &other, &foreign));
    test_expect_failure(pagoda_kv_cache_create(model, two, foreign, NULL, &cache), PAGODA_ERR_INVALID_ARGUMENT,
                        "another model shape");
    /* tp=3 cannot split 8 heads. */
    pagoda_mesh_t *three = test_mesh("cpu:0-2", "tp=3");
    test_expect_failure(pagoda_kv_cache_create(model, three, NULL, NULL, &cache), PAGODA_ERR_UNSUPPORTED,
                        "power of two");
    /* dp is refused as not executed yet. */
    pagoda_mesh_t *dp = test_mesh("cpu:0-1", "dp=2");
    test_expect_failure(pagoda_kv_cache_create(model, dp, NULL, NULL, &cache), PAGODA_ERR_UNSUPPORTED, "dp=2");
    /* ep splits experts: this model is dense. */
    pagoda_mesh_t *ep = test_mesh("cpu:0-1", "ep=2");
    test_expect_failure(pagoda_kv_cache_create(model, ep, NULL, NULL, &cache), PAGODA_ERR_INVALID_ARGUMENT, "dense");
    /* An engine given another plan than its cache's: tp=2 against pp=2 on two plain devices. */
    pagoda_mesh_t *plain = test_mesh("cpu:0-1", NULL);
    pagoda_plan_options_default(&po);
    po.tensor_parallel = 2;
    pagoda_plan_t *tp2 = NULL;
    TEST_ASSERT_OK(pagoda_plan_create(model, plain, &po, &tp2));
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, plain, tp2, NULL, &cache));
    pagoda_engine_t *engine = NULL;
    test_expect_failure(pagoda_engine_create(model, plain, pp2, cache, NULL, &engine),
                        PAGODA_ERR_INVALID_ARGUMENT, "same plan");
    test_expect_failure(pagoda_engine_create(model, four, NULL, cache, NULL, &engine),
                        PAGODA_ERR_INVALID_ARGUMENT, "lives on cpu:0,cpu:1");
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.decode_graphs = PAGODA_DECODE_GRAPHS_ON;
    test_expect_failure(pagoda_engine_create(model, plain, tp2, cache, &eo, &engine), PAGODA_ERR_UNSUPPORTED,
                        "decode graphs");
    assert_null(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_plan_destroy(tp2);
    pagoda_plan_destroy(foreign);
    pagoda_plan_destroy(pp2);
    pagoda_mesh_destroy(plain);
    pagoda_mesh_destroy(dp);
    pagoda_mesh_destroy(ep);
    pagoda_mesh_destroy(three);
    pagoda_mesh_destroy(four);
    pagoda_mesh_destroy(two);
    pagoda_model_destroy(model);
}

/* A plan from JSON runs as is: pp=2 with the planner's stage boundaries, written and read back. */
static void test_plan_from_json_runs(void **state) {
    (void)state;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(STORIES, NULL, &model));
    pagoda_mesh_t *mesh = test_mesh("cpu:0-1", "pp=2");
    pagoda_plan_options_t po;
    pagoda_plan_options_default(&po);
    po.stages = 2;
    po.prompt_tokens = 64;
    pagoda_plan_t *plan = NULL;
    TEST_ASSERT_OK(pagoda_plan_create(model, mesh, &po, &plan));
    char *json = NULL;
    TEST_ASSERT_OK(pagoda_plan_to_json(plan, &json));
    pagoda_plan_t *read = NULL;
    TEST_ASSERT_OK(pagoda_plan_from_json(json, &read));
    pagoda_free(json);
    run_result_t *alone = test_xcalloc(1, sizeof *alone), *meshed = test_xcalloc(1, sizeof *meshed);
    pagoda_mesh_t *one = test_mesh("cpu:0", NULL);
    run_on(model, one, NULL, &kTight, submit_workload, alone);
    run_on(model, mesh, read, &kTight, submit_workload, meshed);
    expect_same(alone, meshed, "pp=2 from JSON, sliced prefill");
    free(alone);
    free(meshed);
    pagoda_plan_destroy(read);
    pagoda_plan_destroy(plan);
    pagoda_mesh_destroy(one);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

/* ---- One mesh over the processes of an mpirun launch ------------------------------------- */

/* Set by --world: the axes over every rank's cpu:0, whether preemption swaps, and the model
 * (--moe: the mixture of experts). */
static const char *g_world_axes;
static int g_world_swap;
static const char *g_world_model = STORIES;

static int32_t no_processing(void *user, uint64_t request_id, int32_t sequence_index,
                             const int32_t *token_ids, size_t n_tokens, size_t n_prompt_tokens,
                             float *logits, size_t n_logits) {
    (void)user, (void)request_id, (void)sequence_index, (void)token_ids, (void)n_tokens;
    (void)n_prompt_tokens, (void)logits, (void)n_logits;
    return 0;
}

/* Rank 0 of a mesh over processes refuses a logits processor: a function pointer cannot reach
 * the other ranks. Nothing is submitted, so the followers see no request. */
static void expect_processor_refused(pagoda_model_t *model, pagoda_mesh_t *mesh,
                                     const serving_t *how) {
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    make_engine(model, mesh, NULL, how, &cache, &engine);
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.logits_processor = no_processing;
    const int32_t prompt[] = {1, 2, 3};
    uint64_t id = 0;
    test_expect_failure(pagoda_engine_submit_tokens(engine, prompt, 3, &ro, &id),
                        PAGODA_ERR_UNSUPPORTED, "logits_processor");
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
}

/* Under mpirun: rank 0 serves the workload on a mesh over every rank (each bringing cpu:0) and
 * compares it with the one-device run in its own process; the other ranks follow its steps. On
 * every rank the cache lends no block at the end. */
static void test_world_matches_one_device(void **state) {
    (void)state;
    const serving_t *how = g_world_swap ? &kTightSwap : &kTight;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(g_world_model, NULL, &model));
    pagoda_mesh_t *mesh = test_mesh("cpu:0", g_world_axes); /* rank and size from mpirun */
    int32_t rank = -1, size = 0;
    TEST_ASSERT_OK(pagoda_mesh_world(mesh, &rank, &size));
    assert_true(size > 1);
    if (rank != 0) {
        pagoda_kv_cache_t *cache = NULL;
        pagoda_engine_t *engine = NULL;
        /* First the engine whose processor rank 0 refuses: it sees no request, then stops. */
        make_engine(model, mesh, NULL, how, &cache, &engine);
        TEST_ASSERT_OK(pagoda_engine_follow(engine));
        pagoda_engine_destroy(engine);
        pagoda_kv_cache_destroy(cache);
        make_engine(model, mesh, NULL, how, &cache, &engine);
        TEST_ASSERT_OK(pagoda_engine_follow(engine));
        pagoda_kv_cache_stats_t kv;
        memset(&kv, 0, sizeof kv);
        kv.struct_size = sizeof kv;
        TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &kv));
        assert_int_equal(kv.blocks_used, 0);
        assert_int_equal(kv.swap_blocks_used, 0);
        pagoda_engine_destroy(engine);
        pagoda_kv_cache_destroy(cache);
    } else {
        run_result_t *alone = test_xcalloc(1, sizeof *alone), *meshed = test_xcalloc(1, sizeof *meshed);
        expect_processor_refused(model, mesh, how);
        run_on(model, mesh, NULL, how, submit_workload, meshed);
        pagoda_mesh_options_t one_process;
        pagoda_mesh_options_default(&one_process);
        one_process.rank = 0;
        one_process.world_size = 1;
        pagoda_mesh_t *one = NULL;
        TEST_ASSERT_OK(pagoda_mesh_create(&one_process, &one));
        run_on(model, one, NULL, how, submit_workload, alone);
        pagoda_mesh_destroy(one);
        char what[96];
        snprintf(what, sizeof what, "%s over %d processes%s", g_world_axes, size, g_world_swap ? " (swap)" : "");
        expect_same(alone, meshed, what);
        free(alone);
        free(meshed);
    }
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

static int world_main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--world") == 0 && i + 1 < argc) g_world_axes = argv[++i];
        else if (strcmp(argv[i], "--swap") == 0) g_world_swap = 1;
        else if (strcmp(argv[i], "--moe") == 0) g_world_model = PAGODA_MESH_MODELS_DIR "/moe/model.gguf";
    }
    if (g_world_axes == NULL) {
        fputs("usage: test_engine_mesh [--world AXES [--swap] [--moe]] (under mpirun)\n", stderr);
        return 2;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_world_matches_one_device)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) return world_main(argc, argv);
    /* Four logical CPU devices of one thread each (the CTest environment sets this too). */
    setenv("PAGODA_BACKEND_CPU_CONFIG", "devices=4,threads=4", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories_layouts),  cmocka_unit_test(test_stories_layouts_swap),
        cmocka_unit_test(test_gqa_layouts),      cmocka_unit_test(test_mqa_layouts),
        cmocka_unit_test(test_moe_layouts),
        cmocka_unit_test(test_quantized_layouts), cmocka_unit_test(test_quantized_activations),
        cmocka_unit_test(test_memory_per_device), cmocka_unit_test(test_plan_mismatches),
        cmocka_unit_test(test_plan_from_json_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
