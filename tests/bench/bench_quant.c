/* pagoda-bench-quant: what quantizing costs in accuracy. Quantizes an F32/F16/BF16 GGUF model
 * with each type (pagoda_model_quantize), then compares the next-token distributions of each
 * quantized model with the source's at every position of one sequence the source model sampled:
 * the mean KL divergence KL(source || quantized) and the top-1 agreement, besides the file size
 * and the weights' relative RMSE. Public API only: the distributions are prompt log-probabilities
 * with the whole vocabulary as the top-n.
 *
 *   pagoda-bench-quant --model F16.gguf [--positions N] [--types q8_0,q4_0,...] [--out-dir D]
 *                      [--seed S]
 *
 * The sequence is the prompt "Once upon a time" (token id 1 for a model without a vocabulary)
 * and N tokens the source model samples after it (temperature 1, the given seed); the quantized
 * files go to D (default: a temporary folder, removed after). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pagoda/pagoda.h"

typedef struct quant_name {
    const char *name;
    pagoda_quant_type_t type;
} quant_name_t;

static const quant_name_t kTypes[] = {{"q8_0", PAGODA_QUANT_Q8_0},
                                      {"q6_k", PAGODA_QUANT_Q6_K},
                                      {"q5_k_m", PAGODA_QUANT_Q5_K_M},
                                      {"q4_k_m", PAGODA_QUANT_Q4_K_M},
                                      {"q4_0", PAGODA_QUANT_Q4_0}};
#define N_TYPES (sizeof kTypes / sizeof kTypes[0])

static int check(pagoda_status_t status, const char *what) {
    if (status == PAGODA_OK) return 0;
    fprintf(stderr, "pagoda-bench-quant: %s: %s: %s\n", what, pagoda_status_string(status),
            pagoda_last_error_message());
    return 1;
}

/* A model with an engine to run it. */
typedef struct runner {
    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    int64_t vocab;
} runner_t;

static void runner_close(runner_t *r) {
    pagoda_engine_destroy(r->engine);
    pagoda_kv_cache_destroy(r->cache);
    pagoda_mesh_destroy(r->mesh);
    pagoda_model_destroy(r->model);
    memset(r, 0, sizeof *r);
}

static int runner_open(runner_t *r, const char *path) {
    memset(r, 0, sizeof *r);
    pagoda_model_info_t info = {.struct_size = sizeof info};
    if (check(pagoda_model_open(path, NULL, &r->model), path) ||
        check(pagoda_model_get_info(r->model, &info), "model info") ||
        check(pagoda_mesh_create(NULL, &r->mesh), "mesh") ||
        check(pagoda_kv_cache_create(r->model, r->mesh, NULL, NULL, &r->cache), "KV cache") ||
        check(pagoda_engine_create(r->model, r->mesh, NULL, r->cache, NULL, &r->engine), "engine")) {
        runner_close(r);
        return 1;
    }
    r->vocab = info.vocab_size;
    return 0;
}

/* Runs one request to its end, handing each output to `take`. */
static int run_request(runner_t *r, const int32_t *ids, size_t n_ids, const char *text,
                       const pagoda_request_options_t *o,
                       int (*take)(void *user, const pagoda_output_t *out), void *user) {
    uint64_t id = 0;
    pagoda_status_t s = text ? pagoda_engine_submit_text(r->engine, text, strlen(text), o, &id)
                             : pagoda_engine_submit_tokens(r->engine, ids, n_ids, o, &id);
    if (check(s, "submit")) return 1;
    for (int finished = 0; !finished;) {
        if (check(pagoda_engine_step(r->engine), "step")) return 1;
        pagoda_output_t out = {.struct_size = sizeof out};
        while ((s = pagoda_engine_poll(r->engine, &out)) == PAGODA_OK) {
            if (take(user, &out)) return 1;
            finished |= out.request_finished;
        }
        if (s != PAGODA_ERR_EMPTY && check(s, "poll")) return 1;
    }
    return 0;
}

/* The sampled sequence: prompt ids, then the generated ones. */
typedef struct sequence {
    int32_t *ids;
    size_t n, cap;
} sequence_t;

static int append_ids(sequence_t *q, const int32_t *ids, size_t n) {
    if (q->n + n > q->cap) {
        size_t cap = (q->n + n) * 2;
        int32_t *grown = realloc(q->ids, cap * sizeof *grown);
        if (!grown) return 1;
        q->ids = grown, q->cap = cap;
    }
    memcpy(q->ids + q->n, ids, n * sizeof *ids);
    q->n += n;
    return 0;
}

static int take_sample(void *user, const pagoda_output_t *out) {
    return append_ids(user, out->token_ids, out->n_tokens);
}

/* Log-distributions [positions][vocab] of the next token after each prefix of the sequence
 * (position p predicts token p + 1), from the prompt log-probabilities. */
typedef struct distributions {
    float *logp;
    size_t positions;
    int64_t vocab;
} distributions_t;

static int take_distributions(void *user, const pagoda_output_t *out) {
    distributions_t *d = user;
    if (out->prompt_top_logprobs == NULL) return 0; /* later outputs carry none */
    if (out->n_prompt_top_logprobs != d->vocab) {
        fprintf(stderr, "pagoda-bench-quant: %d top log-probabilities a position, want %lld\n",
                out->n_prompt_top_logprobs, (long long)d->vocab);
        return 1;
    }
    /* Row p + 1 of the output holds the distribution given tokens 0..p. */
    for (size_t p = 0; p < d->positions; p++) {
        const pagoda_logprob_t *row = out->prompt_top_logprobs + (p + 1) * (size_t)d->vocab;
        for (int64_t k = 0; k < d->vocab; k++)
            if (row[k].token_id >= 0 && row[k].token_id < d->vocab)
                d->logp[p * (size_t)d->vocab + (size_t)row[k].token_id] = row[k].logprob;
    }
    return 0;
}

static int distributions_of(runner_t *r, const sequence_t *q, distributions_t *d) {
    d->positions = q->n - 1;
    d->vocab = r->vocab;
    d->logp = malloc(d->positions * (size_t)d->vocab * sizeof *d->logp);
    if (!d->logp) return 1;
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 0.0f;
    o.max_tokens = 1;
    o.prompt_logprobs = (int32_t)r->vocab;
    return run_request(r, q->ids, q->n, NULL, &o, take_distributions, d);
}

/* Mean KL(p || q) in nats and the fraction of positions whose most likely token agrees. */
static void compare(const distributions_t *p, const distributions_t *q, double *kl, double *top1) {
    double sum = 0;
    size_t agree = 0;
    for (size_t i = 0; i < p->positions; i++) {
        const float *a = p->logp + i * (size_t)p->vocab, *b = q->logp + i * (size_t)q->vocab;
        double k = 0;
        int64_t best_a = 0, best_b = 0;
        for (int64_t v = 0; v < p->vocab; v++) {
            k += exp((double)a[v]) * ((double)a[v] - (double)b[v]);
            if (a[v] > a[best_a]) best_a = v;
            if (b[v] > b[best_b]) best_b = v;
        }
        sum += k;
        agree += best_a == best_b;
    }
    *kl = sum / (double)p->positions;
    *top1 = (double)agree / (double)p->positions;
}

static int usage(void) {
    fputs("usage: pagoda-bench-quant --model F16.gguf [--positions N] [--types q8_0,q6_k,...] "
          "[--out-dir DIR] [--seed S]\n",
          stderr);
    return 2;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *types = NULL, *out_dir = NULL;
    long positions = 1024, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        const char *flag = argv[i], *value = argv[++i];
        if (strcmp(flag, "--model") == 0) model_path = value;
        else if (strcmp(flag, "--positions") == 0) positions = atol(value);
        else if (strcmp(flag, "--types") == 0) types = value;
        else if (strcmp(flag, "--out-dir") == 0) out_dir = value;
        else if (strcmp(flag, "--seed") == 0) seed = atol(value);
        else return usage();
    }
    if (!model_path || positions < 1) return usage();
    char temp_dir[] = "/tmp/pagoda-bench-quant-XXXXXX";
    int remove_dir = 0;
    if (!out_dir) {
        if (!mkdtemp(temp_dir)) return perror("mkdtemp"), 1;
        out_dir = temp_dir, remove_dir = 1;
    }

    runner_t source;
    if (runner_open(&source, model_path)) return 1;
    sequence_t seq = {0};
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.temperature = 1.0f;
    o.max_tokens = (int32_t)positions;
    o.seed = (uint64_t)seed;
    o.flags |= PAGODA_REQUEST_IGNORE_EOS;
    /* The prompt's ids first; a model without a vocabulary (a random one) starts from id 1. */
    pagoda_tokenizer_t *tok = NULL;
    int32_t *prompt = NULL, first_id = 1;
    size_t n_prompt = 0;
    int failed = 0;
    if (pagoda_tokenizer_from_model(source.model, &tok) == PAGODA_OK) {
        failed = check(pagoda_tokenizer_encode(tok, "Once upon a time", 16, PAGODA_TOKENIZE_ADD_SPECIAL,
                                               &prompt, &n_prompt),
                       "encode") ||
                 append_ids(&seq, prompt, n_prompt);
    } else {
        failed = append_ids(&seq, &first_id, 1);
        n_prompt = 1;
    }
    failed = failed || run_request(&source, seq.ids, seq.n, NULL, &o, take_sample, &seq);
    pagoda_free(prompt);
    pagoda_tokenizer_destroy(tok);
    distributions_t reference = {0};
    failed = failed || distributions_of(&source, &seq, &reference);
    runner_close(&source);
    if (failed) return 1;
    printf("%s: %zu positions (a prompt of %zu tokens and %ld sampled), vocabulary %lld\n",
           model_path, reference.positions, n_prompt, positions, (long long)reference.vocab);
    printf("%-7s %9s %14s %12s %8s\n", "type", "file MiB", "relative rmse", "mean KL", "top-1");

    for (size_t t = 0; t < N_TYPES && !failed; t++) {
        if (types && !strstr(types, kTypes[t].name)) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s.gguf", out_dir, kTypes[t].name);
        pagoda_quantize_options_t qo;
        pagoda_quantize_options_default(&qo);
        qo.type = kTypes[t].type;
        pagoda_quantize_stats_t st = {.struct_size = sizeof st};
        if (check(pagoda_model_quantize(model_path, path, &qo, &st), kTypes[t].name)) {
            failed = 1;
            break;
        }
        /* The relative RMSE of the type most values went to. */
        int main_type = 0;
        for (int k = 1; k < st.n_types; k++)
            if (st.types[k].values > st.types[main_type].values) main_type = k;
        runner_t quantized;
        distributions_t d = {0};
        failed = runner_open(&quantized, path) || distributions_of(&quantized, &seq, &d);
        if (quantized.engine) runner_close(&quantized);
        if (!failed) {
            double kl, top1;
            compare(&reference, &d, &kl, &top1);
            printf("%-7s %9.2f %9.4f %-4s %12.5f %7.2f%%\n", kTypes[t].name,
                   (double)st.output_bytes / 1048576.0, st.types[main_type].relative_rmse,
                   st.types[main_type].name, kl, 100.0 * top1);
            fflush(stdout);
        }
        free(d.logp);
        if (remove_dir) remove(path);
    }
    free(reference.logp);
    free(seq.ids);
    if (remove_dir) rmdir(temp_dir);
    return failed;
}
