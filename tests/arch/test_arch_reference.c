/* One architecture against an independent reference (hf_reference.py, float64 numpy on the
 * Hugging Face folder), through the public API:
 *
 *     test_arch_reference MODEL_DIR REFERENCE_FILE [AXES ...]
 *
 * MODEL_DIR holds the random model in both formats (hf/ and model.gguf). For each format the
 * prompt is served teacher-forced with prompt log-probabilities (its log-probability and the
 * top-1 token at every position), then greedily for the reference's continuation; on one device
 * they must match the reference (every top-1, every greedy token, log-probabilities within
 * kTolerance), and on each mesh layout AXES ("tp=2", "pp=2", ...) the one device's run. */
#define _DEFAULT_SOURCE /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_PROMPT 2048
#define MAX_GREEDY 64
#define MAX_LAYOUTS 8
#define MAX_DEVICES 8

/* f32 activations over a few layers differ from float64 by ~1e-5 in log-probability; a wrong
 * norm, rotation or window moves them by 1e-2 and more. */
static const double kTolerance = 2e-3;
/* Layouts reorder the same f32 sums (split dot products, all-reduces). */
static const double kLayoutTolerance = 1e-4;

typedef struct reference {
    int32_t prompt[MAX_PROMPT];
    size_t n_prompt;
    int32_t greedy[MAX_GREEDY];
    size_t n_greedy;
    double logprob[MAX_PROMPT]; /* of prompt[i] given prompt[:i], i ≥ 1 */
    int32_t top1[MAX_PROMPT];
    double margin[MAX_PROMPT]; /* the runner-up's distance below top-1 */
} reference_t;

typedef struct served {
    float logprob[MAX_PROMPT];
    int32_t top1[MAX_PROMPT];
    size_t n_prompt;
    int32_t greedy[MAX_GREEDY];
    size_t n_greedy;
    pagoda_device_stats_t devices[MAX_DEVICES]; /* what each device of the mesh held */
    size_t n_devices;
} served_t;

static const char *g_model_dir;
static const char *g_reference_path;
static const char *g_layouts[MAX_LAYOUTS];
static int g_n_layouts;

/* Reads "<label> id id ..." into `ids`. */
static size_t read_ids(FILE *f, const char *label, int32_t *ids, size_t max) {
    char word[32];
    if (fscanf(f, "%31s", word) != 1 || strcmp(word, label) != 0)
        fail_msg("%s: expected the line '%s ...'", g_reference_path, label);
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) == ' ') {
        if (n == max) fail_msg("%s: more than %zu ids on '%s'", g_reference_path, max, label);
        if (fscanf(f, "%d", &ids[n]) != 1) fail_msg("%s: a bad id on '%s'", g_reference_path, label);
        ++n;
    }
    return n;
}

static void read_reference(reference_t *r) {
    FILE *f = fopen(g_reference_path, "r");
    if (f == NULL) fail_msg("cannot open %s", g_reference_path);
    r->n_prompt = read_ids(f, "prompt", r->prompt, MAX_PROMPT);
    r->n_greedy = read_ids(f, "greedy", r->greedy, MAX_GREEDY);
    for (size_t i = 1; i < r->n_prompt; ++i)
        if (fscanf(f, "%lf %d %lf", &r->logprob[i], &r->top1[i], &r->margin[i]) != 3)
            fail_msg("%s: position %zu is missing", g_reference_path, i);
    fclose(f);
}

/* The prompt served on `mesh`: teacher-forced log-probabilities, then the greedy tokens. */
static void serve(pagoda_model_t *model, pagoda_mesh_t *mesh, const reference_t *ref, served_t *out) {
    memset(out, 0, sizeof *out);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.block_size = 16;
    ko.num_blocks = (int64_t)(ref->n_prompt + ref->n_greedy) / 16 + 4;
    pagoda_kv_cache_t *cache = NULL;
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, &ko, &cache));
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    eo.max_num_batched_tokens = 128; /* the prompt goes in chunks, each attending to the last */
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, &eo, &engine));

    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.temperature = 0.0f;
    ro.max_tokens = (int32_t)ref->n_greedy;
    ro.flags = PAGODA_REQUEST_IGNORE_EOS;
    ro.prompt_logprobs = 1;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(engine, ref->prompt, ref->n_prompt, &ro, &id));
    int steps = 0;
    while (pagoda_engine_has_work(engine)) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        while (pagoda_engine_poll(engine, &o) == PAGODA_OK) {
            if (o.status != PAGODA_OK) fail_msg("the request failed: %s", o.error);
            if (o.prompt_logprobs != NULL) {
                assert_int_equal(o.n_prompt_tokens, ref->n_prompt);
                assert_int_equal(o.n_prompt_top_logprobs, 1);
                out->n_prompt = o.n_prompt_tokens;
                for (size_t i = 1; i < o.n_prompt_tokens; ++i) {
                    out->logprob[i] = o.prompt_logprobs[i];
                    out->top1[i] = o.prompt_top_logprobs[i].token_id;
                }
            }
            for (size_t i = 0; i < o.n_tokens && out->n_greedy < MAX_GREEDY; ++i)
                out->greedy[out->n_greedy++] = o.token_ids[i];
        }
        assert_true(++steps < 4000);
    }
    out->n_devices = pagoda_engine_device_count(engine);
    assert_true(out->n_devices >= 1 && out->n_devices <= MAX_DEVICES);
    for (size_t d = 0; d < out->n_devices; ++d) {
        out->devices[d].struct_size = sizeof out->devices[d];
        TEST_ASSERT_OK(pagoda_engine_get_device_stats(engine, d, &out->devices[d]));
    }
    pagoda_kv_cache_stats_t kv;
    memset(&kv, 0, sizeof kv);
    kv.struct_size = sizeof kv;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(cache, &kv));
    assert_int_equal(kv.blocks_used, 0);
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    assert_int_equal(out->n_prompt, ref->n_prompt);
    assert_int_equal(out->n_greedy, ref->n_greedy);
}

static void expect_reference(const reference_t *ref, const served_t *got, const char *what) {
    double worst = 0, closest = INFINITY;
    size_t agree = 0;
    for (size_t i = 1; i < ref->n_prompt; ++i) {
        const double d = fabs((double)got->logprob[i] - ref->logprob[i]);
        worst = isnan(d) || d > worst ? (isnan(d) ? INFINITY : d) : worst;
        agree += got->top1[i] == ref->top1[i];
        if (ref->margin[i] < closest) closest = ref->margin[i];
    }
    size_t greedy_agree = 0;
    while (greedy_agree < ref->n_greedy && got->greedy[greedy_agree] == ref->greedy[greedy_agree]) ++greedy_agree;
    printf("  %-44s worst |d logprob| %.2e over %zu positions, top-1 %zu/%zu (closest reference "
           "margin %.1e), greedy %zu/%zu\n",
           what, worst, ref->n_prompt - 1, agree, ref->n_prompt - 1, closest, greedy_agree, ref->n_greedy);
    if (!(worst <= kTolerance)) fail_msg("%s: log-probabilities differ by %g from the reference", what, worst);
    if (agree != ref->n_prompt - 1) fail_msg("%s: top-1 differs at %zu positions", what, ref->n_prompt - 1 - agree);
    if (greedy_agree != ref->n_greedy) fail_msg("%s: greedy token %zu differs", what, greedy_agree);
}

static void expect_same(const served_t *alone, const served_t *got, const char *what) {
    double worst = 0;
    for (size_t i = 1; i < alone->n_prompt; ++i) {
        const double d = fabs((double)got->logprob[i] - (double)alone->logprob[i]);
        worst = isnan(d) || d > worst ? (isnan(d) ? INFINITY : d) : worst;
        if (got->top1[i] != alone->top1[i]) fail_msg("%s: top-1 at position %zu differs from one device's", what, i);
    }
    for (size_t i = 0; i < alone->n_greedy; ++i)
        if (got->greedy[i] != alone->greedy[i]) fail_msg("%s: greedy token %zu differs from one device's", what, i);
    printf("  %-44s worst |d logprob| %.2e against one device\n", what, worst);
    if (!(worst <= kLayoutTolerance)) fail_msg("%s: log-probabilities differ by %g from one device's", what, worst);
}

/* What each device of a layout holds of the experts, by pagoda_engine_get_device_stats: the
 * experts of its layers split over its stage's devices (whole experts over ep groups, each
 * expert's columns over the tp devices of a group), so that ep=2 holds half of them. */
static void expect_expert_shares(const served_t *alone, const served_t *got, const char *axes, const char *what) {
    const pagoda_device_stats_t *one = &alone->devices[0];
    if (one->expert_weight_bytes == 0) return; /* a dense model */
    const char *ep_axis = strstr(axes, "ep=");
    const int32_t ep = ep_axis != NULL ? atoi(ep_axis + 3) : 1;
    const uint64_t per_layer = one->expert_weight_bytes / (uint64_t)(one->end_layer - one->first_layer);
    for (size_t d = 0; d < got->n_devices; ++d) {
        const pagoda_device_stats_t *s = &got->devices[d];
        const uint64_t want = per_layer * (uint64_t)(s->end_layer - s->first_layer) / (uint64_t)s->tp_size;
        if (s->ep_size != ep || s->ep_rank != s->tp_rank / (s->tp_size / ep) || s->expert_weight_bytes != want)
            fail_msg("%s: %s holds %llu bytes of experts as group %d of %d, want %llu as group %d of %d", what,
                     s->device, (unsigned long long)s->expert_weight_bytes, s->ep_rank, s->ep_size,
                     (unsigned long long)want, s->tp_rank / (s->tp_size / ep), ep);
    }
    printf("  %-44s each device holds %llu of the experts' %llu bytes\n", what,
           (unsigned long long)got->devices[0].expert_weight_bytes, (unsigned long long)one->expert_weight_bytes);
}

/* The devices a layout's axes multiply to: "pp=2,tp=2" → "cpu:0-3". */
static void layout_devices(const char *axes, char *out, size_t size) {
    int devices = 1;
    for (const char *p = strchr(axes, '='); p != NULL; p = strchr(p + 1, '=')) devices *= atoi(p + 1);
    if (devices == 1) snprintf(out, size, "cpu:0");
    else snprintf(out, size, "cpu:0-%d", devices - 1);
}

static void one_format(const reference_t *ref, const char *path, const char *format) {
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(path, NULL, &model));
    served_t *alone = test_xcalloc(1, sizeof *alone), *meshed = test_xcalloc(1, sizeof *meshed);
    pagoda_mesh_t *one = test_mesh("cpu:0", NULL);
    serve(model, one, ref, alone);
    pagoda_mesh_destroy(one);
    char what[128];
    snprintf(what, sizeof what, "%s, one device", format);
    expect_reference(ref, alone, what);
    for (int i = 0; i < g_n_layouts; ++i) {
        char devices[32];
        layout_devices(g_layouts[i], devices, sizeof devices);
        pagoda_mesh_t *mesh = test_mesh(devices, g_layouts[i]);
        serve(model, mesh, ref, meshed);
        pagoda_mesh_destroy(mesh);
        snprintf(what, sizeof what, "%s, %s", format, g_layouts[i]);
        expect_same(alone, meshed, what);
        expect_expert_shares(alone, meshed, g_layouts[i], what);
    }
    free(alone);
    free(meshed);
    pagoda_model_destroy(model);
}

static void test_against_reference(void **state) {
    (void)state;
    reference_t *ref = test_xcalloc(1, sizeof *ref);
    read_reference(ref);
    char path[1024];
    snprintf(path, sizeof path, "%s/hf", g_model_dir);
    one_format(ref, path, "Hugging Face folder");
    snprintf(path, sizeof path, "%s/model.gguf", g_model_dir);
    one_format(ref, path, "GGUF");
    free(ref);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc - 3 > MAX_LAYOUTS) {
        fprintf(stderr, "usage: %s MODEL_DIR REFERENCE_FILE [AXES ...] (at most %d layouts)\n", argv[0],
                MAX_LAYOUTS);
        return 2;
    }
    g_model_dir = argv[1];
    g_reference_path = argv[2];
    for (int i = 3; i < argc; ++i) g_layouts[g_n_layouts++] = argv[i];
    /* Four logical CPU devices of one thread each (the CTest environment sets this too). */
    setenv("PAGODA_BACKEND_CPU_CONFIG", "devices=4,threads=4", 0);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_reference)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
