/* What test_engine_mesh runs on every layout and compares with one device: a workload of mixed
 * requests, the results it gathers per request and sequence, and the engine that serves it. */
#ifndef PAGODA_TEST_MESH_RUN_H
#define PAGODA_TEST_MESH_RUN_H

#include "test_util.h"

#define STORIES PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"
#define MAX_REQS 24
#define MAX_SEQS 4
#define MAX_TOK 64

typedef struct sequence_result {
    int32_t tokens[MAX_TOK];
    float logprobs[MAX_TOK];
    size_t n;
} sequence_result_t;

typedef struct run_result {
    sequence_result_t seqs[MAX_REQS][MAX_SEQS];
    float prompt_logprobs[MAX_REQS][MAX_TOK];
    size_t n_prompt_logprobs[MAX_REQS];
    size_t n_requests;
    pagoda_engine_stats_t stats;
    pagoda_kv_cache_stats_t kv;
} run_result_t;

/* How a run is served: the cache's size and the engine's limits. */
typedef struct serving {
    int64_t num_blocks;
    int32_t block_size;
    int32_t max_batched;
    int32_t preemption;
    int32_t quantized_matmul; /* a pagoda_quantized_matmul_t */
} serving_t;

/* What a run submits: requests for a model of `vocab` tokens; returns how many. */
typedef size_t (*workload_fn)(pagoda_engine_t *engine, int32_t vocab);

/* A prompt of `len` ids below `vocab`, from a small generator, sharing its first `shared`
 * tokens with every prompt of the same `family`. */
void make_prompt(int32_t *out, int len, int shared, int family, int index, int32_t vocab);
/* Submits the workload: greedy requests with chosen-token log-probabilities (some sharing a
 * long prefix, some long enough to be chunked, two asking prompt log-probabilities), seeded
 * parallel sampling (n = 2), beam search (width 2) and sampling under logit controls. */
size_t submit_workload(pagoda_engine_t *engine, int32_t vocab);
/* Adds one polled output to `r`. */
void collect(run_result_t *r, const pagoda_output_t *o);
/* The cache and engine `how` says, on `mesh`. */
void make_engine(pagoda_model_t *model, pagoda_mesh_t *mesh, const pagoda_plan_t *plan,
                 const serving_t *how, pagoda_kv_cache_t **cache_out,
                 pagoda_engine_t **engine_out);
/* Serves what `submit` submits on `mesh` (with `plan`, or the planner's) and checks that the
 * cache lends no block once it is done. */
void run_on(pagoda_model_t *model, pagoda_mesh_t *mesh, const pagoda_plan_t *plan,
            const serving_t *how, workload_fn submit, run_result_t *r);
/* Fails unless `got` has `want`'s tokens and, within 1e-4, its log-probabilities. */
void expect_same(const run_result_t *want, const run_result_t *got, const char *what);

#endif
