/* pagoda bench: benchmarks through the public API. `pagoda bench serve` replays a synthetic
 * serving workload with paged and with contiguous KV reservation (bench_serve.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_serve.h"
#include "cli.h"

static void bench_usage(FILE *out) {
    fputs("Usage: pagoda bench serve [options]\n"
          "\n"
          "Subcommands:\n"
          "  serve   replay a synthetic serving workload (run 'pagoda bench serve --help')\n",
          out);
}

static void serve_usage(FILE *out) {
    fputs("Usage: pagoda bench serve [--model PATH] --workload sharegpt|alpaca --rate R\n"
          "                          --requests N --kv-blocks B [options]\n"
          "\n"
          "Replays requests shaped like the vLLM paper's traces (random prompt ids, greedy\n"
          "decoding past EOS to each request's sampled length) in real time through the engine,\n"
          "and prints one line per mode: throughput, normalized latency (seconds per output\n"
          "token), TTFT, time per output token, mean batch size and the share of KV memory that\n"
          "holds tokens. The contiguous mode reserves prompt + max_tokens per request at\n"
          "admission, as Orca/FasterTransformer do; paged allocates block by block.\n"
          "\n"
          "Options:\n"
          "  --model PATH              GGUF file or Hugging Face folder (default: the bundled\n"
          "                            stories260K; pagoda-bench-serve adds --random-model)\n"
          "  --workload W              sharegpt (161/338 tokens, default) or alpaca (19/58)\n"
          "  --rate R                  requests per second (default 2)\n"
          "  --cv C                    coefficient of variation of arrival gaps: 1 = Poisson\n"
          "                            (default), else Gamma\n"
          "  --requests N              requests to replay (default 200)\n"
          "  --kv-blocks B             KV cache blocks (default 1024)\n"
          "  --block-size S            tokens per block (default 16)\n"
          "  --mode M                  paged, contiguous or both (default both: same workload)\n"
          "  --output-cap C            max: max_tokens fills the sequence limit, what Orca(Max)\n"
          "                            reserves; the sampled length ends the request (default).\n"
          "                            oracle: max_tokens = the sampled length (Orca(Oracle))\n"
          "  --max-sequence T          prompt + output tokens at most (default: the model's\n"
          "                            context, at most the whole cache)\n"
          "  --max-num-seqs M          sequences per step at most (default: the engine's, 256)\n"
          "  --max-num-batched-tokens T  tokens per step at most (default: the engine's)\n"
          "  --seed S                  seed of lengths, arrivals and prompt ids (default 1)\n"
          "  --device LIST             devices (default cpu:0)\n"
          "  --axes AXES               their arrangement, such as tp=2 or pp=2\n"
          "  --plan FILE               a plan written by `pagoda plan --json`\n"
          "  --sweep                   per mode, find the highest rate whose mean normalized\n"
          "                            latency stays within --slo: double the rate from --rate\n"
          "                            until it fails, then bisect; prints every probe and a\n"
          "                            summary line (with the paged/contiguous ratio for both)\n"
          "  --slo S                   the sweep's limit, seconds per output token (default 0.1)\n"
          "  --sweep-steps K           bisection steps after the bracket (default 3)\n"
          "  --quick                   smoke run: 20 requests at rate 20 on 64 blocks, both modes\n"
          "  --json                    JSON lines only (default: JSON lines and a summary on\n"
          "                            stderr)\n"
          "  --help                    show this help\n",
          out);
}

/* The command line, parsed. */
typedef struct serve_args {
    const char *model;
    cli_placement_t placement;
    bench_workload_options_t workload;
    bench_serve_options_t serve;
    int modes; /* bit 0: paged, bit 1: contiguous */
    int sweep, sweep_steps, json;
    double slo;
    int32_t max_sequence_flag; /* 0 = from the model and cache */
} serve_args_t;

static int parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "pagoda bench serve: %s wants an integer from %lld to %lld, not '%s'\n",
                flag, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_positive(const char *flag, const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v <= 0.0) {
        fprintf(stderr, "pagoda bench serve: %s wants a positive number, not '%s'\n", flag, s);
        return 0;
    }
    *out = v;
    return 1;
}

/* Returns CLI_EXIT_OK, CLI_EXIT_USAGE after printing why, or -1 after printing the help. */
static int parse_serve_args(int argc, char **argv, serve_args_t *a) {
    memset(a, 0, sizeof *a);
    a->workload.kind = BENCH_WORKLOAD_SHAREGPT;
    a->workload.n_requests = 200;
    a->workload.rate = 2.0;
    a->workload.cv = 1.0;
    a->workload.seed = 1;
    a->serve.kv_blocks = 1024;
    a->serve.block_size = 16;
    a->serve.output_cap = BENCH_CAP_MAX;
    a->modes = 3;
    a->sweep_steps = 3;
    a->slo = 0.1;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            serve_usage(stdout);
            return -1;
        }
        if (strcmp(f, "--json") == 0) { a->json = 1; continue; }
        if (strcmp(f, "--sweep") == 0) { a->sweep = 1; continue; }
        if (strcmp(f, "--quick") == 0) { quick = 1; continue; }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda bench serve: unknown option or missing value: '%s'\n\n", f);
            serve_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        long long n = 0;
        int ok = 1;
        if (strcmp(f, "--model") == 0) a->model = v;
        else if (cli_placement_flag(&a->placement, f, v)) continue;
        else if (strcmp(f, "--workload") == 0) {
            if (strcmp(v, "sharegpt") == 0) a->workload.kind = BENCH_WORKLOAD_SHAREGPT;
            else if (strcmp(v, "alpaca") == 0) a->workload.kind = BENCH_WORKLOAD_ALPACA;
            else {
                fprintf(stderr, "pagoda bench serve: --workload is sharegpt or alpaca, not '%s'\n", v);
                ok = 0;
            }
        } else if (strcmp(f, "--mode") == 0) {
            if (strcmp(v, "paged") == 0) a->modes = 1;
            else if (strcmp(v, "contiguous") == 0) a->modes = 2;
            else if (strcmp(v, "both") == 0) a->modes = 3;
            else {
                fprintf(stderr, "pagoda bench serve: --mode is paged, contiguous or both, not '%s'\n", v);
                ok = 0;
            }
        } else if (strcmp(f, "--output-cap") == 0) {
            if (strcmp(v, "max") == 0) a->serve.output_cap = BENCH_CAP_MAX;
            else if (strcmp(v, "oracle") == 0) a->serve.output_cap = BENCH_CAP_ORACLE;
            else {
                fprintf(stderr, "pagoda bench serve: --output-cap is max or oracle, not '%s'\n", v);
                ok = 0;
            }
        }
        else if (strcmp(f, "--rate") == 0) ok = parse_positive(f, v, &a->workload.rate);
        else if (strcmp(f, "--cv") == 0) ok = parse_positive(f, v, &a->workload.cv);
        else if (strcmp(f, "--slo") == 0) ok = parse_positive(f, v, &a->slo);
        else if (strcmp(f, "--requests") == 0) { ok = parse_int(f, v, 1, 10000000, &n); a->workload.n_requests = (size_t)n; }
        else if (strcmp(f, "--kv-blocks") == 0) { ok = parse_int(f, v, 1, INT32_MAX, &n); a->serve.kv_blocks = n; }
        else if (strcmp(f, "--block-size") == 0) { ok = parse_int(f, v, 1, 128, &n); a->serve.block_size = (int32_t)n; }
        else if (strcmp(f, "--max-sequence") == 0) { ok = parse_int(f, v, 2, INT32_MAX, &n); a->max_sequence_flag = (int32_t)n; }
        else if (strcmp(f, "--max-num-seqs") == 0) { ok = parse_int(f, v, 1, INT32_MAX, &n); a->serve.max_num_seqs = (int32_t)n; }
        else if (strcmp(f, "--max-num-batched-tokens") == 0) { ok = parse_int(f, v, 1, INT32_MAX, &n); a->serve.max_num_batched_tokens = (int32_t)n; }
        else if (strcmp(f, "--seed") == 0) { ok = parse_int(f, v, 0, INT64_MAX, &n); a->workload.seed = (uint64_t)n; }
        else if (strcmp(f, "--sweep-steps") == 0) { ok = parse_int(f, v, 0, 20, &n); a->sweep_steps = (int)n; }
        else {
            fprintf(stderr, "pagoda bench serve: unknown option '%s'\n\n", f);
            serve_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        if (!ok) return CLI_EXIT_USAGE;
    }
    if (quick) {
        /* Overrides whatever came before: the smoke run's shape is fixed. */
        a->workload.n_requests = 20;
        a->workload.rate = 20.0;
        a->serve.kv_blocks = 64;
        a->modes = 3;
        a->sweep = 0;
    }
    a->serve.seed = a->workload.seed;
    return CLI_EXIT_OK;
}

static void print_result(const serve_args_t *a, pagoda_kv_reservation_t mode, double rate,
                         const bench_serve_result_t *r) {
    printf("{\"bench\": \"serve\", \"mode\": \"%s\", \"workload\": \"%s\", \"rate\": %.6g, "
           "\"cv\": %.6g, \"output_cap\": \"%s\", \"kv_blocks\": %lld, \"block_size\": %d, "
           "\"max_sequence\": %d, \"requests\": %zu, \"duration_s\": %.6g, "
           "\"requests_per_s\": %.6g, \"output_tokens_per_s\": %.6g, "
           "\"normalized_latency_s_mean\": %.6g, \"normalized_latency_s_p99\": %.6g, "
           "\"ttft_s_p50\": %.6g, \"ttft_s_p99\": %.6g, \"tpot_s_p50\": %.6g, "
           "\"tpot_s_p99\": %.6g, \"mean_batch_size\": %.6g, \"kv_used_by_tokens\": %.6g, "
           "\"kv_blocks_used_fraction\": %.6g, \"preemptions\": %lld, \"steps\": %lld, "
           "\"mean_prompt_tokens\": %.6g, \"mean_output_tokens\": %.6g}\n",
           bench_reservation_name(mode), bench_workload_name(a->workload.kind), rate,
           a->workload.cv, bench_output_cap_name(a->serve.output_cap),
           (long long)a->serve.kv_blocks, (int)a->serve.block_size, (int)a->serve.max_sequence,
           r->requests, r->duration_s, r->requests_per_s, r->output_tokens_per_s,
           r->normalized_latency_s_mean, r->normalized_latency_s_p99, r->ttft_s_p50,
           r->ttft_s_p99, r->tpot_s_p50, r->tpot_s_p99, r->mean_batch_size,
           r->kv_used_by_tokens, r->kv_blocks_used_fraction, (long long)r->preemptions,
           (long long)r->steps, r->mean_prompt_tokens, r->mean_output_tokens);
    fflush(stdout);
    if (!a->json)
        fprintf(stderr, "[%s at %.3g req/s: %.3f req/s, %.0f tokens/s, normalized latency %.4f s "
                        "(p99 %.4f), batch %.1f, KV used by tokens %.1f%%, %lld preemptions]\n",
                bench_reservation_name(mode), rate, r->requests_per_s, r->output_tokens_per_s,
                r->normalized_latency_s_mean, r->normalized_latency_s_p99, r->mean_batch_size,
                100.0 * r->kv_used_by_tokens, (long long)r->preemptions);
}

/* Samples the workload at `rate` and replays it in `mode`; prints the line. */
static pagoda_status_t run_once(const serve_args_t *a, const pagoda_model_t *model,
                                const pagoda_mesh_t *mesh, pagoda_kv_reservation_t mode,
                                double rate, bench_request_t *reqs, bench_serve_result_t *r) {
    bench_workload_options_t w = a->workload;
    w.rate = rate;
    if (bench_workload_generate(&w, reqs) != 0) return PAGODA_ERR_INVALID_ARGUMENT;
    bench_serve_options_t o = a->serve;
    o.reservation = mode;
    memset(r, 0, sizeof *r);
    pagoda_status_t s = bench_serve_run(model, mesh, &o, reqs, w.n_requests, r);
    if (s == PAGODA_OK) print_result(a, mode, rate, r);
    return s;
}

/* The highest rate `mode` sustains within the SLO (0 when not even the lowest probe does).
 * Doubling from --rate brackets it; bisection narrows the bracket. Rates below 1/64 of --rate
 * are not tried. */
static pagoda_status_t sweep_mode(const serve_args_t *a, const pagoda_model_t *model,
                                  const pagoda_mesh_t *mesh, pagoda_kv_reservation_t mode,
                                  bench_request_t *reqs, double *best) {
    bench_serve_result_t r;
    double pass = 0.0, fail = 0.0, rate = a->workload.rate;
    pagoda_status_t s;
    for (int i = 0; i < 12; i++) {
        if ((s = run_once(a, model, mesh, mode, rate, reqs, &r)) != PAGODA_OK) return s;
        const int ok = r.normalized_latency_s_mean <= a->slo;
        if (ok) pass = rate; else fail = rate;
        if (pass > 0.0 && fail > 0.0) break;
        if (!ok && rate < a->workload.rate / 64.0) break;
        rate = ok ? rate * 2.0 : rate / 2.0;
    }
    for (int k = 0; k < a->sweep_steps && pass > 0.0 && fail > 0.0; k++) {
        rate = sqrt(pass * fail); /* geometric midpoint: rates span octaves */
        if ((s = run_once(a, model, mesh, mode, rate, reqs, &r)) != PAGODA_OK) return s;
        if (r.normalized_latency_s_mean <= a->slo) pass = rate; else fail = rate;
    }
    *best = pass;
    printf("{\"bench\": \"serve_sweep\", \"mode\": \"%s\", \"workload\": \"%s\", "
           "\"slo_normalized_latency_s\": %.6g, \"max_rate_within_slo\": %.6g, "
           "\"first_rate_over_slo\": %.6g}\n",
           bench_reservation_name(mode), bench_workload_name(a->workload.kind), a->slo, pass,
           fail);
    fflush(stdout);
    return PAGODA_OK;
}

static int bench_serve_main(int argc, char **argv) {
    serve_args_t a;
    int rc = parse_serve_args(argc, argv, &a);
    if (rc == -1) return CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK) return rc;
    const char *model_path = a.model ? a.model : cli_default_model();
    if (!model_path) {
        fputs("pagoda bench serve: no --model given and the bundled model was not found\n", stderr);
        return CLI_EXIT_FAILED;
    }

    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_plan_t *plan = NULL;
    bench_request_t *reqs = NULL;
    pagoda_status_t s;
    rc = CLI_EXIT_FAILED;
    if (cli_open_model(model_path, &a.placement, &model, &mesh, &plan) != CLI_EXIT_OK) goto done;
    a.serve.plan = plan;
    int32_t rank = 0, world_size = 1;
    if ((s = pagoda_mesh_world(mesh, &rank, &world_size)) != PAGODA_OK) {
        cli_fail("reading the mesh's processes", s);
        goto done;
    }
    if (world_size > 1 && a.sweep) {
        /* A sweep picks its next rate from what rank 0 measured, which the followers never see. */
        fputs("pagoda bench serve: --sweep is not offered on a mesh over several processes\n", stderr);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    /* Rank 0 reports; the other ranks only take part in its steps (and so print nothing: their
     * JSON lines would go to /dev/null, and JSON mode drops the summary line). */
    if (rank != 0) {
        if (freopen("/dev/null", "w", stdout) == NULL) goto done;
        a.json = 1;
    }
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if ((s = pagoda_model_get_info(model, &info)) != PAGODA_OK) {
        cli_fail("describing the model", s);
        goto done;
    }
    /* A request must fit the context and, reserved whole, the cache: longer ones would be
     * refused at submit in contiguous mode. */
    const int64_t cache_tokens = a.serve.kv_blocks * a.serve.block_size;
    int64_t limit = info.max_position < cache_tokens ? info.max_position : cache_tokens;
    if (a.max_sequence_flag > 0) {
        if (a.max_sequence_flag > limit) {
            fprintf(stderr, "pagoda bench serve: --max-sequence %d exceeds what the model's "
                            "context (%lld) and the cache (%lld tokens) allow\n",
                    (int)a.max_sequence_flag, (long long)info.max_position,
                    (long long)cache_tokens);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        limit = a.max_sequence_flag;
    }
    a.workload.max_sequence = a.serve.max_sequence = (int32_t)limit;

    reqs = calloc(a.workload.n_requests, sizeof *reqs);
    if (!reqs) {
        fputs("pagoda bench serve: out of memory for the workload\n", stderr);
        goto done;
    }
    const pagoda_kv_reservation_t modes[2] = {PAGODA_KV_PAGED, PAGODA_KV_CONTIGUOUS};
    double best[2] = {0.0, 0.0};
    for (int m = 0; m < 2; m++) {
        if (!(a.modes & (1 << m))) continue;
        bench_serve_result_t r;
        s = a.sweep ? sweep_mode(&a, model, mesh, modes[m], reqs, &best[m])
                    : run_once(&a, model, mesh, modes[m], a.workload.rate, reqs, &r);
        if (s != PAGODA_OK) goto done;
    }
    if (a.sweep && a.modes == 3) {
        printf("{\"bench\": \"serve_sweep_ratio\", \"workload\": \"%s\", "
               "\"slo_normalized_latency_s\": %.6g, \"paged_max_rate\": %.6g, "
               "\"contiguous_max_rate\": %.6g, \"ratio\": %.6g}\n",
               bench_workload_name(a.workload.kind), a.slo, best[0], best[1],
               best[1] > 0.0 ? best[0] / best[1] : 0.0);
    }
    rc = CLI_EXIT_OK;

done:
    free(reqs);
    pagoda_plan_destroy(plan);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return rc;
}

int cli_bench(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) return bench_serve_main(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        bench_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc >= 2) fprintf(stderr, "pagoda bench: unknown benchmark '%s'\n\n", argv[1]);
    bench_usage(stderr);
    return CLI_EXIT_USAGE;
}
