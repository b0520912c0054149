/* The serving benchmark: workload sampling, wall-clock replay through the engine, metrics.
 * See bench_serve.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime(CLOCK_MONOTONIC), nanosleep */

#include "bench_serve.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Random numbers: our own, so a seed gives the same workload on every libc. ---- */

/* splitmix64 (Steele, Lea, Flood, OOPSLA 2014): plenty for sampling lengths and gaps. */
typedef struct bench_rng {
    uint64_t state;
} bench_rng_t;

static uint64_t rng_next(bench_rng_t *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in the open interval (0, 1), so that log() of it is finite. */
static double rng_uniform(bench_rng_t *r) {
    return ((double)(rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal by Box-Muller (one of the pair is dropped; speed does not matter here). */
static double rng_normal(bench_rng_t *r) {
    const double two_pi = 6.283185307179586;
    return sqrt(-2.0 * log(rng_uniform(r))) * cos(two_pi * rng_uniform(r));
}

/* Gamma(shape, 1) by Marsaglia and Tsang (ACM TOMS 26(3), 2000); shape < 1 through the
 * identity Gamma(a) = Gamma(a + 1) · U^(1/a). */
static double rng_gamma(bench_rng_t *r, double shape) {
    if (shape < 1.0) return rng_gamma(r, shape + 1.0) * pow(rng_uniform(r), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        const double x = rng_normal(r);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        if (log(rng_uniform(r)) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
    }
}

/* A log-normal length with the given mean: mu = ln(mean) - sigma²/2 makes E[e^(mu+sigma·N)]
 * equal the mean. At least 1 token. */
static int32_t rng_length(bench_rng_t *r, double mean, double sigma) {
    const double mu = log(mean) - 0.5 * sigma * sigma;
    const double x = exp(mu + sigma * rng_normal(r));
    return x >= 2e9 ? INT32_MAX : (int32_t)fmax(1.0, floor(x + 0.5));
}

/* ---- Workloads ---- */

/* Means from the vLLM paper's §6.1 (ShareGPT 161.31 / 337.99, Alpaca 19.31 / 58.45 tokens).
 * The spreads are ours, chosen so ShareGPT's lengths have the long right tails of its Fig. 11a
 * and Alpaca's stay short (Fig. 11b). */
typedef struct length_model {
    double prompt_mean, prompt_sigma, output_mean, output_sigma;
} length_model_t;

static length_model_t length_model(bench_workload_kind_t kind) {
    if (kind == BENCH_WORKLOAD_ALPACA) return (length_model_t){19.31, 0.6, 58.45, 0.7};
    return (length_model_t){161.31, 1.0, 337.99, 0.9};
}

const char *bench_workload_name(bench_workload_kind_t kind) {
    return kind == BENCH_WORKLOAD_ALPACA ? "alpaca" : "sharegpt";
}

const char *bench_reservation_name(pagoda_kv_reservation_t reservation) {
    return reservation == PAGODA_KV_CONTIGUOUS ? "contiguous" : "paged";
}

const char *bench_output_cap_name(bench_output_cap_t cap) {
    return cap == BENCH_CAP_ORACLE ? "oracle" : "max";
}

int bench_workload_generate(const bench_workload_options_t *o, bench_request_t *out) {
    if (!(o->rate > 0.0) || !isfinite(o->rate) || !(o->cv > 0.0) || !isfinite(o->cv)) {
        fprintf(stderr, "pagoda bench serve: the rate (%g) and the CV (%g) must be positive\n",
                o->rate, o->cv);
        return -1;
    }
    if (o->max_sequence < 2) {
        fprintf(stderr, "pagoda bench serve: sequences of at most %d tokens cannot hold a prompt "
                        "and an output token\n", (int)o->max_sequence);
        return -1;
    }
    const length_model_t lm = length_model(o->kind);
    bench_rng_t rng = {o->seed};
    /* Gaps are Gamma(k, θ) with k = 1/CV² and mean kθ = 1/rate; k = 1 is Poisson arrivals. */
    const double shape = 1.0 / (o->cv * o->cv), scale = 1.0 / (o->rate * shape);
    double t = 0.0;
    for (size_t i = 0; i < o->n_requests; i++) {
        t += rng_gamma(&rng, shape) * scale;
        int32_t p, g;
        do {
            p = rng_length(&rng, lm.prompt_mean, lm.prompt_sigma);
            g = rng_length(&rng, lm.output_mean, lm.output_sigma);
        } while ((int64_t)p + g > o->max_sequence);
        out[i].arrival_s = t;
        out[i].prompt_tokens = p;
        out[i].output_tokens = g;
    }
    return 0;
}

/* ---- Replay ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double seconds) {
    if (seconds <= 0.0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

/* What the driver knows about one request while it runs. */
typedef struct request_record {
    uint64_t id;
    double first_token_s; /* < 0 until the first token */
    double finish_s;      /* < 0 until finished */
    int32_t generated;
} request_record_t;

/* Request id -> index into the records: open addressing over a power-of-two table. */
typedef struct id_index {
    uint64_t *ids; /* 0 = empty (the engine never gives id 0) */
    size_t *slots;
    size_t mask;
} id_index_t;

static int id_index_init(id_index_t *x, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    x->ids = calloc(cap, sizeof *x->ids);
    x->slots = calloc(cap, sizeof *x->slots);
    x->mask = cap - 1;
    return x->ids && x->slots ? 0 : -1;
}

static size_t id_hash(uint64_t id, size_t mask) {
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

static void id_index_put(id_index_t *x, uint64_t id, size_t slot) {
    size_t h = id_hash(id, x->mask);
    while (x->ids[h] != 0) h = (h + 1) & x->mask;
    x->ids[h] = id;
    x->slots[h] = slot;
}

/* Returns the slot, or (size_t)-1 for an id that was never put. */
static size_t id_index_get(const id_index_t *x, uint64_t id) {
    for (size_t h = id_hash(id, x->mask); x->ids[h] != 0; h = (h + 1) & x->mask)
        if (x->ids[h] == id) return x->slots[h];
    return (size_t)-1;
}

static void id_index_free(id_index_t *x) {
    free(x->ids);
    free(x->slots);
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n), linearly interpolated between order statistics; sorts v. */
static double quantile(double *v, size_t n, double q) {
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, compare_doubles);
    const double pos = q * (double)(n - 1);
    const size_t lo = (size_t)pos;
    const size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (pos - (double)lo) * (v[hi] - v[lo]);
}

static pagoda_status_t report(const char *what, pagoda_status_t s) {
    fprintf(stderr, "pagoda bench serve: %s: %s: %s\n", what, pagoda_status_string(s),
            pagoda_last_error_message());
    return s;
}

/* Fills the latency figures of `r` from the finished records. */
static void summarize(const bench_request_t *reqs, const request_record_t *recs, size_t n,
                      double *scratch, bench_serve_result_t *r) {
    double first_arrival = n ? reqs[0].arrival_s : 0.0, last_finish = 0.0, tokens = 0.0;
    double prompt_sum = 0.0, norm_sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].finish_s > last_finish) last_finish = recs[i].finish_s;
        tokens += recs[i].generated;
        prompt_sum += reqs[i].prompt_tokens;
        scratch[i] = (recs[i].finish_s - reqs[i].arrival_s) / (double)recs[i].generated;
        norm_sum += scratch[i];
    }
    r->requests = n;
    r->duration_s = last_finish - first_arrival;
    r->requests_per_s = r->duration_s > 0 ? (double)n / r->duration_s : 0.0;
    r->output_tokens_per_s = r->duration_s > 0 ? tokens / r->duration_s : 0.0;
    r->mean_prompt_tokens = n ? prompt_sum / (double)n : 0.0;
    r->mean_output_tokens = n ? tokens / (double)n : 0.0;
    r->normalized_latency_s_mean = n ? norm_sum / (double)n : 0.0;
    r->normalized_latency_s_p99 = quantile(scratch, n, 0.99);
    for (size_t i = 0; i < n; i++) scratch[i] = recs[i].first_token_s - reqs[i].arrival_s;
    r->ttft_s_p50 = quantile(scratch, n, 0.50);
    r->ttft_s_p99 = quantile(scratch, n, 0.99);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].generated > 1)
            scratch[m++] = (recs[i].finish_s - recs[i].first_token_s) / (recs[i].generated - 1);
    r->tpot_s_p50 = quantile(scratch, m, 0.50);
    r->tpot_s_p99 = quantile(scratch, m, 0.99);
}

pagoda_status_t bench_serve_run(const pagoda_model_t *model, const pagoda_mesh_t *mesh,
                                const bench_serve_options_t *o, const bench_request_t *reqs,
                                size_t n, bench_serve_result_t *result) {
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    request_record_t *recs = calloc(n ? n : 1, sizeof *recs);
    double *scratch = calloc(n ? n : 1, sizeof *scratch);
    int32_t *prompt = NULL;
    id_index_t index = {NULL, NULL, 0};
    pagoda_status_t s = PAGODA_OK;
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    int32_t longest_prompt = 1;
    for (size_t i = 0; i < n; i++)
        if (reqs[i].prompt_tokens > longest_prompt) longest_prompt = reqs[i].prompt_tokens;
    prompt = malloc((size_t)longest_prompt * sizeof *prompt);
    if (!recs || !scratch || !prompt || id_index_init(&index, n) != 0) {
        fputs("pagoda bench serve: out of memory for the request records\n", stderr);
        s = PAGODA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if ((s = pagoda_model_get_info(model, &info)) != PAGODA_OK) {
        report("describing the model", s);
        goto done;
    }

    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = o->kv_blocks;
    ko.block_size = o->block_size;
    ko.prefix_caching = 0; /* random prompts share nothing; keep the pool's accounting plain */
    if ((s = pagoda_kv_cache_create(model, mesh, o->plan, &ko, &cache)) != PAGODA_OK) {
        report("allocating the KV cache", s);
        goto done;
    }
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (o->max_num_seqs > 0) eo.max_num_seqs = o->max_num_seqs;
    if (o->max_num_batched_tokens > 0) eo.max_num_batched_tokens = o->max_num_batched_tokens;
    eo.kv_reservation = (int32_t)o->reservation;
    if ((s = pagoda_engine_create(model, mesh, o->plan, cache, &eo, &engine)) != PAGODA_OK) {
        report("making the engine", s);
        goto done;
    }
    /* Under mpirun, rank 0 runs the workload; the other ranks take part in its steps. */
    if (cli_follow_unless_rank0(mesh, engine, &s)) goto done;

    bench_rng_t token_rng = {o->seed ^ 0x5EEDF00Dull};
    double kv_used_sum = 0.0, kv_blocks_sum = 0.0;
    int64_t kv_samples = 0;
    size_t next = 0, finished = 0;
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    pagoda_kv_cache_stats_t ks;
    memset(&ks, 0, sizeof ks);
    ks.struct_size = sizeof ks;
    const double start = now_s();
    for (size_t i = 0; i < n; i++) recs[i].first_token_s = recs[i].finish_s = -1.0;

    while (finished < n) {
        const double t = now_s() - start;
        for (; next < n && reqs[next].arrival_s <= t; next++) {
            const bench_request_t *q = &reqs[next];
            for (int32_t k = 0; k < q->prompt_tokens; k++)
                prompt[k] = (int32_t)(rng_next(&token_rng) % (uint64_t)info.vocab_size);
            pagoda_request_options_t ro;
            pagoda_request_options_default(&ro);
            ro.temperature = 0.0f;
            /* Past EOS always: the sampled length, not the random weights, ends a request. */
            ro.flags = PAGODA_REQUEST_IGNORE_EOS;
            ro.max_tokens = o->output_cap == BENCH_CAP_ORACLE
                                ? q->output_tokens
                                : o->max_sequence - q->prompt_tokens;
            uint64_t id = 0;
            if ((s = pagoda_engine_submit_tokens(engine, prompt, (size_t)q->prompt_tokens, &ro,
                                                 &id)) != PAGODA_OK) {
                report("submitting a request", s);
                goto done;
            }
            recs[next].id = id;
            id_index_put(&index, id, next);
        }
        if (!pagoda_engine_has_work(engine)) {
            if (next < n) sleep_s(reqs[next].arrival_s - (now_s() - start));
            continue;
        }
        if ((s = pagoda_engine_step(engine)) != PAGODA_OK) {
            report("stepping the engine", s);
            goto done;
        }
        const double stepped = now_s() - start;
        if ((s = pagoda_kv_cache_get_stats(cache, &ks)) != PAGODA_OK) {
            report("reading the KV cache's statistics", s);
            goto done;
        }
        if (ks.blocks_used > 0) {
            kv_used_sum += (double)ks.slots_used / ((double)ks.blocks_used * ks.block_size);
            kv_blocks_sum += (double)ks.blocks_used / (double)ks.blocks_total;
            kv_samples++;
        }
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            const size_t i = id_index_get(&index, out.request_id);
            if (i == (size_t)-1 || recs[i].finish_s >= 0.0) continue; /* e.g. our abort's output */
            if (out.finish_reason == PAGODA_FINISH_ERROR) {
                fprintf(stderr, "pagoda bench serve: request %zu failed: %s\n", i, out.error);
                s = out.status != PAGODA_OK ? out.status : PAGODA_ERR_INTERNAL;
                goto done;
            }
            if (out.n_tokens > 0 && recs[i].first_token_s < 0.0) recs[i].first_token_s = stepped;
            recs[i].generated = (int32_t)out.n_generated;
            const int reached = recs[i].generated >= reqs[i].output_tokens;
            if (reached || out.finish_reason != PAGODA_FINISH_NONE) {
                /* An engine that ends a request early (or runs past its length) would make
                 * every figure wrong: fail loudly instead. */
                if (recs[i].generated != reqs[i].output_tokens) {
                    fprintf(stderr, "pagoda bench serve: request %zu ended after %d tokens, not "
                                    "its %d\n", i, (int)recs[i].generated,
                            (int)reqs[i].output_tokens);
                    s = PAGODA_ERR_INTERNAL;
                    goto done;
                }
                recs[i].finish_s = stepped;
                finished++;
                /* The sampled length plays the end-of-sequence token under --output-cap max. */
                if (out.finish_reason == PAGODA_FINISH_NONE &&
                    (s = pagoda_engine_abort(engine, out.request_id)) != PAGODA_OK) {
                    report("ending a request at its sampled length", s);
                    goto done;
                }
            }
        }
    }

    summarize(reqs, recs, n, scratch, result);
    result->kv_used_by_tokens = kv_samples ? kv_used_sum / (double)kv_samples : 0.0;
    result->kv_blocks_used_fraction = kv_samples ? kv_blocks_sum / (double)kv_samples : 0.0;
    pagoda_engine_stats_t es;
    memset(&es, 0, sizeof es);
    es.struct_size = sizeof es;
    if ((s = pagoda_engine_get_stats(engine, &es)) != PAGODA_OK) {
        report("reading the engine's statistics", s);
        goto done;
    }
    result->steps = es.steps;
    result->mean_batch_size = es.steps ? (double)es.batched_sequences / (double)es.steps : 0.0;
    result->preemptions = es.preemptions_recompute + es.preemptions_swap;

done:
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    id_index_free(&index);
    free(prompt);
    free(scratch);
    free(recs);
    return s;
}
