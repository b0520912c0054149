/* The serving benchmark behind `pagoda bench serve`: synthetic workloads shaped like the vLLM
 * paper's (Kwon et al., SOSP 2023, §6.1), replayed in wall-clock time through the public engine
 * API, once with paged KV and once with a contiguous reservation per request, as Orca and
 * FasterTransformer reserve it. Public API and ISO C11 only, so that the CLI and the test
 * bench (tests/bench/bench_serve.cpp) share one implementation.
 */
#ifndef PAGODA_CLI_BENCH_SERVE_H
#define PAGODA_CLI_BENCH_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <pagoda/pagoda.h>

/* Length distributions of the paper's two traces (its Fig. 11): mean prompt / output tokens
 * ShareGPT 161 / 338, Alpaca 19 / 58. */
typedef enum bench_workload_kind {
    BENCH_WORKLOAD_SHAREGPT = 0,
    BENCH_WORKLOAD_ALPACA = 1
} bench_workload_kind_t;

/* What each request may generate at most, which is what the contiguous baseline reserves. */
typedef enum bench_output_cap {
    /* Orca(Max): max_tokens = what is left of the sequence limit after the prompt; the sampled
     * length is where the "model" stops (the driver aborts the request right after the step that
     * produced its last token, as an end-of-sequence token would end it). */
    BENCH_CAP_MAX = 0,
    /* Orca(Oracle): max_tokens = the sampled length, with PAGODA_REQUEST_IGNORE_EOS. */
    BENCH_CAP_ORACLE = 1
} bench_output_cap_t;

/* One request of a workload. Arrival times are seconds from the start of the replay. */
typedef struct bench_request {
    double arrival_s;
    int32_t prompt_tokens;
    int32_t output_tokens;
} bench_request_t;

/* A workload's shape. */
typedef struct bench_workload_options {
    bench_workload_kind_t kind;
    size_t n_requests;
    double rate;          /* requests per second, > 0 */
    double cv;            /* coefficient of variation of the gaps: 1 = Poisson, else Gamma */
    uint64_t seed;
    int32_t max_sequence; /* prompt + output tokens at most (the model's context, the cache) */
} bench_workload_options_t;

/* Fills out[0 .. n_requests) with requests sampled from the options. Lengths are log-normal
 * with the trace's mean, redrawn when prompt + output exceeds max_sequence (so the means sit a
 * little below the paper's for short contexts; the results report the means actually used).
 * Returns 0 on success, -1 (after a message on stderr) for options out of range. */
int bench_workload_generate(const bench_workload_options_t *options, bench_request_t *out);

/* One replay's settings. */
typedef struct bench_serve_options {
    pagoda_kv_reservation_t reservation; /* PAGODA_KV_PAGED or PAGODA_KV_CONTIGUOUS */
    bench_output_cap_t output_cap;
    int64_t kv_blocks;
    int32_t block_size;
    int32_t max_num_seqs;                /* 0 = the engine's default */
    int32_t max_num_batched_tokens;      /* 0 = the engine's default */
    int32_t max_sequence;                /* as in bench_workload_options_t */
    uint64_t seed;                       /* of the prompts' token ids */
    const pagoda_plan_t *plan;           /* the layout on a mesh; NULL: the library's */
} bench_serve_options_t;

/* What one replay measured. Times in seconds. */
typedef struct bench_serve_result {
    size_t requests;
    double duration_s;              /* first arrival to last finish */
    double requests_per_s;
    double output_tokens_per_s;
    double normalized_latency_s_mean; /* per request: (finish - arrival) / output tokens */
    double normalized_latency_s_p99;
    double ttft_s_p50, ttft_s_p99;  /* first token - arrival */
    double tpot_s_p50, tpot_s_p99;  /* (finish - first token) / (output tokens - 1) */
    double mean_batch_size;         /* the engine's batched sequences / steps */
    double kv_used_by_tokens;       /* mean over steps with blocks in use: slots / block slots */
    double kv_blocks_used_fraction; /* mean over the same steps: blocks in use / pool */
    int64_t preemptions;
    int64_t steps;
    double mean_prompt_tokens, mean_output_tokens;
} bench_serve_result_t;

/* Replays `requests` (sorted by arrival) on a fresh KV cache and engine for `model` on `mesh`.
 * Submits each request when its arrival time comes, steps while there is work, and sleeps until
 * the next arrival when the engine is idle (real time throughout, no fast-forward: what is
 * measured is what a client would see). Returns PAGODA_OK, or the failing call's status after
 * printing what failed to stderr. */
pagoda_status_t bench_serve_run(const pagoda_model_t *model, const pagoda_mesh_t *mesh,
                                const bench_serve_options_t *options,
                                const bench_request_t *requests, size_t n_requests,
                                bench_serve_result_t *result);

/* Names used on the command line and in JSON. */
const char *bench_workload_name(bench_workload_kind_t kind);
const char *bench_reservation_name(pagoda_kv_reservation_t reservation);
const char *bench_output_cap_name(bench_output_cap_t cap);

#endif /* PAGODA_CLI_BENCH_SERVE_H */
