/* pagoda tune: time the backends' kernels on a model's matrix products and keep the fastest per
 * shape in a kernel choice file (kernel_choice.h), which generate, serve and bench then read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void tune_usage(FILE *out) {
    fputs("Usage: pagoda tune --model PATH --out FILE [options]\n"
          "\n"
          "Times each kernel a backend offers for every matrix product of the model, at each\n"
          "power-of-two number of rows (tokens in a step) up to --max-tokens, keeps the fastest\n"
          "per shape in FILE (adding to what it holds; shapes it has are not measured again),\n"
          "and prints the table with each choice's speed-up over the backend's own rules.\n"
          "`pagoda generate --kernel-choices FILE` and the engine option kernel_choices_file\n"
          "then run with those choices.\n"
          "\n"
          "Options:\n"
          "  --model PATH        GGUF file or Hugging Face folder (default: the bundled model)\n"
          "  --out FILE          the kernel choice file to write (JSON)\n"
          "  --max-tokens N      the largest step measured, in tokens (default 512)\n"
          "  --device LIST       devices (default cpu:0)\n"
          "  --axes AXES         how they are arranged, such as tp=2\n"
          "  --plan FILE         a plan written by `pagoda plan --json`\n"
          "  --exact-matmul      measure the products as --exact-matmul runs them\n"
          "  --help              show this help\n",
          out);
}

typedef struct tune_args {
    const char *model;
    const char *out;
    long long max_tokens;
    int exact_matmul;
    cli_placement_t placement;
} tune_args_t;

static int parse_args(int argc, char **argv, tune_args_t *a) {
    memset(a, 0, sizeof *a);
    a->max_tokens = 512;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            tune_usage(stdout);
            exit(CLI_EXIT_OK);
        }
        if (strcmp(f, "--exact-matmul") == 0) {
            a->exact_matmul = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda tune: unknown option or missing value: '%s'\n\n", f);
            tune_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (strcmp(f, "--model") == 0) a->model = v;
        else if (strcmp(f, "--out") == 0) a->out = v;
        else if (cli_placement_flag(&a->placement, f, v)) continue;
        else if (strcmp(f, "--max-tokens") == 0) {
            char *end;
            errno = 0;
            a->max_tokens = strtoll(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || a->max_tokens < 1 || a->max_tokens > 65536) {
                fprintf(stderr, "pagoda tune: --max-tokens wants an integer from 1 to 65536, not '%s'\n", v);
                return CLI_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "pagoda tune: unknown option '%s'\n\n", f);
            tune_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!a->out) {
        fputs("pagoda tune: --out FILE is required\n\n", stderr);
        tune_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* The table, one line per entry, then per row count the products' summed times. */
static int print_table(const pagoda_engine_t *engine) {
    size_t count = 0;
    pagoda_status_t s = pagoda_engine_kernel_choice_count(engine, &count);
    if (s != PAGODA_OK) return cli_fail("reading the kernel choices", s);
    enum { kMaxBuckets = 32 };
    double rules_sum[kMaxBuckets] = {0}, chosen_sum[kMaxBuckets] = {0};
    int64_t bucket_rows[kMaxBuckets] = {0};
    printf("%-22s %-9s %6s %-10s %11s %11s %8s\n", "weights (n x k type)", "x", "rows", "chosen",
           "chosen us", "rules us", "speed-up");
    char device[sizeof ((pagoda_kernel_choice_info_t *)0)->device] = "";
    for (size_t i = 0; i < count; i++) {
        pagoda_kernel_choice_info_t c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        if ((s = pagoda_engine_kernel_choice(engine, i, &c)) != PAGODA_OK)
            return cli_fail("reading a kernel choice", s);
        if (strcmp(device, c.device) != 0) {
            printf("device %s\n", c.device);
            memcpy(device, c.device, sizeof device);
        }
        char shape[64];
        snprintf(shape, sizeof shape, "%lld x %lld %s", (long long)c.n, (long long)c.k,
                 pagoda_dtype_name(c.w_dtype));
        char x[16];
        snprintf(x, sizeof x, "%s%s", pagoda_dtype_name(c.x_dtype),
                 (c.flags & PAGODA_MATMUL_QUANTIZE_X) ? "/q8" : "");
        const double speedup = c.seconds > 0 ? c.rules_seconds / c.seconds : 0.0;
        printf("%-22s %-9s %6lld %-10s %11.1f %11.1f %7.2fx\n", shape, x, (long long)c.m, c.variant,
               1e6 * c.seconds, 1e6 * c.rules_seconds, speedup);
        int b = 0;
        while (b < kMaxBuckets - 1 && (int64_t)1 << b < c.m) b++;
        bucket_rows[b] = c.m;
        rules_sum[b] += c.rules_seconds;
        chosen_sum[b] += c.seconds;
    }
    printf("\nrows  every shape once: rules us  chosen us  speed-up\n");
    for (int b = 0; b < kMaxBuckets; b++)
        if (bucket_rows[b] > 0 && chosen_sum[b] > 0)
            printf("%4lld  %27.1f %10.1f %8.3fx\n", (long long)bucket_rows[b], 1e6 * rules_sum[b],
                   1e6 * chosen_sum[b], rules_sum[b] / chosen_sum[b]);
    return CLI_EXIT_OK;
}

int cli_tune(int argc, char **argv) {
    tune_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK) return rc;
    const char *model_path = a.model ? a.model : cli_default_model();
    if (!model_path) {
        fputs("pagoda tune: no --model given and the bundled model was not found\n", stderr);
        return CLI_EXIT_FAILED;
    }
    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_plan_t *plan = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    pagoda_status_t s;
    rc = CLI_EXIT_FAILED;
    if (cli_open_model(model_path, &a.placement, &model, &mesh, &plan) != CLI_EXIT_OK) goto done;
    /* The engine needs a cache; the measurement uses none of it. */
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = 16;
    if ((s = pagoda_kv_cache_create(model, mesh, plan, &ko, &cache)) != PAGODA_OK) {
        cli_fail("allocating the KV cache", s);
        goto done;
    }
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (a.exact_matmul) eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    eo.max_num_batched_tokens = (int32_t)a.max_tokens;
    eo.kernel_choice = PAGODA_KERNEL_CHOICE_MEASURE;
    eo.kernel_choices_file = a.out;
    fprintf(stderr, "pagoda tune: measuring (steps of 1 to %lld tokens)...\n", a.max_tokens);
    if ((s = pagoda_engine_create(model, mesh, plan, cache, &eo, &engine)) != PAGODA_OK) {
        cli_fail("measuring the kernels", s);
        goto done;
    }
    rc = print_table(engine);
    if (rc == CLI_EXIT_OK) fprintf(stderr, "pagoda tune: wrote %s\n", a.out);

done:
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_plan_destroy(plan);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return rc;
}
