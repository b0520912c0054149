/* pagoda generate: open a model, serve one request through the engine (paged KV cache,
 * continuous batching) and print the text as it comes, or one JSON object at the end. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void generate_usage(FILE *out) {
    fputs("Usage: pagoda generate [--model PATH] (--prompt TEXT | --prompt-ids 1,2,3) [options]\n"
          "\n"
          "Generates text with a model through the engine and prints it as it comes.\n"
          "\n"
          "Options:\n"
          "  --model PATH            GGUF file or Hugging Face folder (default: the bundled\n"
          "                          stories260K)\n"
          "  --prompt TEXT           prompt text (BOS is added as the tokenizer says)\n"
          "  --prompt-ids LIST       prompt token ids, comma-separated, used as given\n"
          "  --max-tokens N          tokens to generate at most (default 128)\n"
          "  --temperature T         0 = greedy (default 0.8)\n"
          "  --top-k K               keep the K most likely tokens, 0 = all (default 40)\n"
          "  --top-p P               nucleus mass (default 0.95)\n"
          "  --min-p P               drop tokens below P x the top probability (default 0.05)\n"
          "  --repeat-penalty R      repetition penalty, 1 = off (default 1)\n"
          "  --presence-penalty X    (default 0)\n"
          "  --frequency-penalty X   (default 0)\n"
          "  --seed S                random seed (default 0); the same seed gives the same text\n"
          "  --stop TEXT             stop at this text (repeatable)\n"
          "  --ignore-eos            keep generating past end-of-sequence\n"
          "  --logprobs N            report the top-N log-probabilities of each token (JSON)\n"
          "  --prompt-logprobs K     report each prompt token's log-probability and the top K\n"
          "  --grammar TEXT          constrain the output to a GBNF grammar (rule root)\n"
          "  --grammar-file FILE     the same, read from a file\n"
          "  --regex TEXT            constrain the output to match a regular expression\n"
          "  --json-schema TEXT      constrain the output to JSON this schema accepts\n"
          "  --json-schema-file FILE the same, read from a file\n"
          "  --device LIST           devices (default cpu:0), such as cpu:0-1; the CPU backend\n"
          "                          offers several with PAGODA_BACKEND_CPU_CONFIG=devices=N\n"
          "  --axes AXES             how they are arranged, such as tp=2 or pp=2,tp=2; under\n"
          "                          mpirun -np N, each rank names its own devices and the\n"
          "                          axes span all N ranks' (rank 0 prints)\n"
          "  --mesh-timeout MS       over several processes: how long a rank waits for the\n"
          "                          others (to meet, in each collective) before it fails\n"
          "                          naming them (default 30000)\n"
          "  --plan FILE             a plan written by `pagoda plan --json` (default: the\n"
          "                          planner's layout for the mesh)\n"
          "  --kv-blocks N           KV cache blocks (default: sized from free memory)\n"
          "  --block-size N          tokens per KV block (default 16)\n"
          "  --exact-matmul          quantized weights (Q8_0, Q4_K, ...) meet the activations\n"
          "                          as they are, in f32; by default a backend may round them\n"
          "                          to 8 bits, as llama.cpp does, which is faster\n"
          "  --kernel-choices FILE   run the kernels `pagoda tune` chose (default: the\n"
          "                          backend's own rules)\n"
          "  --json                  print one JSON object: token_ids, text, finish_reason,\n"
          "                          and prompt_logprobs / logprobs when asked\n"
          "  --help                  show this help\n"
          "\n"
          "Sampling defaults are llama.cpp's; --temperature 0 reproduces greedy decoding.\n",
          out);
}

/* The command line, parsed. */
typedef struct generate_args {
    const char *model;
    const char *prompt;
    const char *prompt_ids;
    cli_placement_t placement;
    const char *stops[16];
    size_t n_stops;
    long long kv_blocks;
    int block_size;
    int json;
    int exact_matmul;
    const char *kernel_choices;
    char *constraint_file_text; /* a --grammar-file or --json-schema-file, read */
    pagoda_request_options_t request;
} generate_args_t;

static int parse_long(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "pagoda generate: %s wants an integer from %lld to %lld, not '%s'\n", flag,
                lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_float(const char *flag, const char *s, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "pagoda generate: %s wants a number, not '%s'\n", flag, s);
        return 0;
    }
    *out = (float)v;
    return 1;
}

/* A whole file as a NUL-terminated string, or NULL after a message. */
static char *read_text_file(const char *flag, const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "pagoda generate: %s: cannot open '%s': %s\n", flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    while (text != NULL) {
        n += fread(text + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *grown = realloc(text, cap *= 2);
        if (grown == NULL) free(text);
        text = grown;
    }
    fclose(f);
    if (text == NULL) {
        fprintf(stderr, "pagoda generate: %s: out of memory reading '%s'\n", flag, path);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* One constraint at most: the later flag would silently replace the earlier. */
static int set_constraint(generate_args_t *a, const char *flag, int32_t kind, const char *text) {
    if (a->request.constraint_kind != PAGODA_CONSTRAINT_NONE) {
        fprintf(stderr, "pagoda generate: %s: give one of --grammar, --grammar-file, --regex, "
                        "--json-schema, --json-schema-file\n", flag);
        return 0;
    }
    a->request.constraint_kind = kind;
    a->request.constraint = text;
    return text != NULL;
}

/* Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing why. */
static int parse_args(int argc, char **argv, generate_args_t *a) {
    memset(a, 0, sizeof *a);
    pagoda_request_options_default(&a->request);
    a->request.max_tokens = 128;
    a->request.temperature = 0.8f;
    a->request.top_k = 40;
    a->request.top_p = 0.95f;
    a->request.min_p = 0.05f;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            generate_usage(stdout);
            exit(CLI_EXIT_OK);
        }
        if (strcmp(f, "--json") == 0) { a->json = 1; continue; }
        if (strcmp(f, "--exact-matmul") == 0) { a->exact_matmul = 1; continue; }
        if (strcmp(f, "--ignore-eos") == 0) { a->request.flags |= PAGODA_REQUEST_IGNORE_EOS; continue; }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda generate: unknown option or missing value: '%s'\n\n", f);
            generate_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        long long n;
        int ok = 1;
        if (strcmp(f, "--model") == 0) a->model = v;
        else if (strcmp(f, "--prompt") == 0) a->prompt = v;
        else if (strcmp(f, "--prompt-ids") == 0) a->prompt_ids = v;
        else if (strcmp(f, "--kernel-choices") == 0) a->kernel_choices = v;
        else if (cli_placement_flag(&a->placement, f, v)) continue;
        else if (strcmp(f, "--max-tokens") == 0) { ok = parse_long(f, v, 1, 1 << 30, &n); a->request.max_tokens = (int32_t)n; }
        else if (strcmp(f, "--temperature") == 0) ok = parse_float(f, v, &a->request.temperature);
        else if (strcmp(f, "--top-k") == 0) { ok = parse_long(f, v, 0, 1 << 30, &n); a->request.top_k = (int32_t)n; }
        else if (strcmp(f, "--top-p") == 0) ok = parse_float(f, v, &a->request.top_p);
        else if (strcmp(f, "--min-p") == 0) ok = parse_float(f, v, &a->request.min_p);
        else if (strcmp(f, "--repeat-penalty") == 0) ok = parse_float(f, v, &a->request.repetition_penalty);
        else if (strcmp(f, "--presence-penalty") == 0) ok = parse_float(f, v, &a->request.presence_penalty);
        else if (strcmp(f, "--frequency-penalty") == 0) ok = parse_float(f, v, &a->request.frequency_penalty);
        else if (strcmp(f, "--seed") == 0) { ok = parse_long(f, v, 0, INT64_MAX, &n); a->request.seed = (uint64_t)n; }
        else if (strcmp(f, "--logprobs") == 0) { ok = parse_long(f, v, 0, 1024, &n); a->request.logprobs = (int32_t)n; }
        else if (strcmp(f, "--prompt-logprobs") == 0) { ok = parse_long(f, v, 0, 1024, &n); a->request.prompt_logprobs = (int32_t)n; }
        else if (strcmp(f, "--grammar") == 0) ok = set_constraint(a, f, PAGODA_CONSTRAINT_GRAMMAR, v);
        else if (strcmp(f, "--regex") == 0) ok = set_constraint(a, f, PAGODA_CONSTRAINT_REGEX, v);
        else if (strcmp(f, "--json-schema") == 0) ok = set_constraint(a, f, PAGODA_CONSTRAINT_JSON_SCHEMA, v);
        else if (strcmp(f, "--grammar-file") == 0 || strcmp(f, "--json-schema-file") == 0) {
            const int32_t kind = f[2] == 'g' ? PAGODA_CONSTRAINT_GRAMMAR : PAGODA_CONSTRAINT_JSON_SCHEMA;
            char *text = read_text_file(f, v);
            ok = set_constraint(a, f, kind, text);
            if (ok) a->constraint_file_text = text;
            else free(text);
        }
        else if (strcmp(f, "--kv-blocks") == 0) ok = parse_long(f, v, 1, INT32_MAX, &a->kv_blocks);
        else if (strcmp(f, "--block-size") == 0) { ok = parse_long(f, v, 1, 128, &n); a->block_size = (int)n; }
        else if (strcmp(f, "--stop") == 0) {
            if (a->n_stops == sizeof a->stops / sizeof a->stops[0]) {
                fputs("pagoda generate: at most 16 --stop strings\n", stderr);
                return CLI_EXIT_USAGE;
            }
            a->stops[a->n_stops++] = v;
        } else {
            fprintf(stderr, "pagoda generate: unknown option '%s'\n\n", f);
            generate_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        if (!ok) return CLI_EXIT_USAGE;
    }
    if ((a->prompt == NULL) == (a->prompt_ids == NULL)) {
        fputs("pagoda generate: give one of --prompt or --prompt-ids\n\n", stderr);
        generate_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    a->request.stop_strings = a->stops;
    a->request.n_stop_strings = a->n_stops;
    return CLI_EXIT_OK;
}

/* "1,2,3" into a new array; NULL (after a message) for anything else. */
static int32_t *parse_ids(const char *list, size_t *n_out) {
    size_t cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return NULL;
    size_t n = 0;
    const char *p = list;
    while (1) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno != 0 || end == p || v < 0 || v > INT32_MAX || (*end != ',' && *end != '\0')) {
            fprintf(stderr, "pagoda generate: --prompt-ids wants comma-separated ids, not '%s'\n", list);
            free(ids);
            return NULL;
        }
        ids[n++] = (int32_t)v;
        if (*end == '\0') break;
        p = end + 1;
    }
    *n_out = n;
    return ids;
}

/* What the request produced, gathered for the JSON object. */
typedef struct collected {
    int32_t *ids;
    size_t n_ids, cap_ids, cap_lps, cap_top;
    char *text;
    size_t text_len, cap_text;
    pagoda_logprob_t *top; /* [n_ids][n_top] */
    float *lps;            /* [n_ids] */
    int32_t n_top;
    float *prompt_lps;     /* [n_prompt] */
    pagoda_logprob_t *prompt_top;
    int32_t n_prompt_top;
    size_t n_prompt;
    pagoda_finish_reason_t finish;
} collected_t;

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) {
        fputs("pagoda generate: out of memory\n", stderr);
        exit(CLI_EXIT_FAILED);
    }
    *cap = c;
    return q;
}

static void collect(collected_t *c, const pagoda_output_t *o) {
    size_t n = c->n_ids + o->n_tokens;
    c->ids = grow(c->ids, &c->cap_ids, n, sizeof *c->ids);
    memcpy(c->ids + c->n_ids, o->token_ids, o->n_tokens * sizeof *o->token_ids);
    if (o->logprobs) {
        c->lps = grow(c->lps, &c->cap_lps, n, sizeof *c->lps);
        memcpy(c->lps + c->n_ids, o->logprobs, o->n_tokens * sizeof *o->logprobs);
        c->n_top = o->n_top_logprobs;
        if (c->n_top > 0) {
            c->top = grow(c->top, &c->cap_top, n * (size_t)c->n_top, sizeof *c->top);
            memcpy(c->top + c->n_ids * (size_t)c->n_top, o->top_logprobs,
                   o->n_tokens * (size_t)c->n_top * sizeof *c->top);
        }
    }
    c->n_ids = n;
    c->text = grow(c->text, &c->cap_text, c->text_len + o->text_len + 1, 1);
    memcpy(c->text + c->text_len, o->text, o->text_len);
    c->text_len += o->text_len;
    c->text[c->text_len] = '\0';
    c->n_prompt = o->n_prompt_tokens;
    if (o->prompt_logprobs) {
        size_t n_top = o->n_prompt_tokens * (size_t)o->n_prompt_top_logprobs;
        c->prompt_lps = grow(NULL, &(size_t){0}, o->n_prompt_tokens, sizeof *c->prompt_lps);
        c->prompt_top = grow(NULL, &(size_t){0}, n_top ? n_top : 1, sizeof *c->prompt_top);
        c->n_prompt_top = o->n_prompt_top_logprobs;
        memcpy(c->prompt_lps, o->prompt_logprobs, o->n_prompt_tokens * sizeof *c->prompt_lps);
        if (n_top) memcpy(c->prompt_top, o->prompt_top_logprobs, n_top * sizeof *c->prompt_top);
    }
    c->finish = o->finish_reason;
}

static const char *finish_name(pagoda_finish_reason_t r) {
    switch (r) {
        case PAGODA_FINISH_NONE: return NULL;
        case PAGODA_FINISH_LENGTH: return "length";
        case PAGODA_FINISH_STOP_TOKEN:
        case PAGODA_FINISH_STOP_STRING: return "stop";
        case PAGODA_FINISH_ABORTED: return "abort";
        case PAGODA_FINISH_ERROR: return "error";
    }
    return NULL;
}

static void print_top(FILE *out, const pagoda_logprob_t *top, int32_t n) {
    fputc('[', out);
    for (int32_t k = 0; k < n; k++)
        fprintf(out, "%s{\"token_id\": %d, \"logprob\": %.6g}", k ? ", " : "", top[k].token_id,
                (double)top[k].logprob);
    fputc(']', out);
}

static void print_json(const collected_t *c) {
    fputs("{\"token_ids\": [", stdout);
    for (size_t i = 0; i < c->n_ids; i++) printf("%s%d", i ? ", " : "", c->ids[i]);
    fputs("], \"text\": ", stdout);
    cli_json_string(stdout, c->text ? c->text : "");
    fputs(", \"finish_reason\": ", stdout);
    cli_json_string(stdout, finish_name(c->finish));
    printf(", \"n_prompt_tokens\": %zu", c->n_prompt);
    if (c->lps) {
        fputs(", \"logprobs\": [", stdout);
        for (size_t i = 0; i < c->n_ids; i++) {
            printf("%s{\"token_id\": %d, \"logprob\": %.6g, \"top\": ", i ? ", " : "", c->ids[i],
                   (double)c->lps[i]);
            print_top(stdout, c->top ? c->top + i * (size_t)c->n_top : NULL, c->top ? c->n_top : 0);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (c->prompt_lps) {
        /* Position 0 has nothing before it: null, as vLLM reports it. */
        fputs(", \"prompt_logprobs\": [null", stdout);
        for (size_t i = 1; i < c->n_prompt; i++) {
            printf(", {\"logprob\": %.6g, \"top\": ", (double)c->prompt_lps[i]);
            print_top(stdout, c->prompt_top + i * (size_t)c->n_prompt_top, c->n_prompt_top);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    fputs("}\n", stdout);
}

static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_generate(int argc, char **argv) {
    generate_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK) return rc;
    const char *model_path = a.model ? a.model : cli_default_model();
    if (!model_path) {
        fputs("pagoda generate: no --model given and the bundled model was not found\n", stderr);
        return CLI_EXIT_FAILED;
    }

    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_plan_t *plan = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    int32_t *ids = NULL;
    collected_t c;
    memset(&c, 0, sizeof c);
    pagoda_status_t s;
    rc = CLI_EXIT_FAILED;

    if (cli_open_model(model_path, &a.placement, &model, &mesh, &plan) != CLI_EXIT_OK) goto done;
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = a.kv_blocks;
    ko.block_size = a.block_size;
    if ((s = pagoda_kv_cache_create(model, mesh, plan, &ko, &cache)) != PAGODA_OK) {
        cli_fail("allocating the KV cache", s);
        goto done;
    }
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (a.exact_matmul) eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
    eo.kernel_choices_file = a.kernel_choices;
    if ((s = pagoda_engine_create(model, mesh, plan, cache, &eo, &engine)) != PAGODA_OK) {
        cli_fail("making the engine", s);
        goto done;
    }
    /* Under mpirun, rank 0 serves the request; the other ranks take part in its steps. */
    if (cli_follow_unless_rank0(mesh, engine, &s)) {
        if (s == PAGODA_OK) rc = CLI_EXIT_OK;
        goto done;
    }

    uint64_t id;
    if (a.prompt_ids) {
        size_t n_ids = 0;
        ids = parse_ids(a.prompt_ids, &n_ids);
        if (!ids) {
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        s = pagoda_engine_submit_tokens(engine, ids, n_ids, &a.request, &id);
    } else {
        s = pagoda_engine_submit_text(engine, a.prompt, strlen(a.prompt), &a.request, &id);
    }
    if (s != PAGODA_OK) {
        cli_fail("submitting the prompt", s);
        goto done;
    }

    /* Prompt text first, so the output reads as a continuation. */
    if (!a.json && a.prompt) fputs(a.prompt, stdout);
    double start = now_seconds(), first_token = 0.0;
    int failed = 0;
    while (pagoda_engine_has_work(engine) && !failed) {
        if ((s = pagoda_engine_step(engine)) != PAGODA_OK) {
            cli_fail("generating", s);
            failed = 1;
        }
        pagoda_output_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            if (first_token == 0.0) first_token = now_seconds();
            if (out.finish_reason == PAGODA_FINISH_ERROR) {
                fprintf(stderr, "pagoda generate: %s\n", out.error);
                failed = 1;
            }
            collect(&c, &out);
            if (!a.json) {
                fwrite(out.text, 1, out.text_len, stdout);
                fflush(stdout);
            }
        }
    }
    double end = now_seconds();
    if (failed) goto done;
    if (a.json) {
        print_json(&c);
    } else {
        fputc('\n', stdout);
        double decode_s = end - first_token;
        fprintf(stderr, "[%zu prompt tokens, %zu generated (%s) in %.3f s; first token after %.1f ms; %.1f tokens/s after it]\n",
                c.n_prompt, c.n_ids, finish_name(c.finish), end - start, 1e3 * (first_token - start),
                c.n_ids > 1 && decode_s > 0 ? (double)(c.n_ids - 1) / decode_s : 0.0);
    }
    rc = CLI_EXIT_OK;

done:
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_plan_destroy(plan);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    free(ids);
    free(a.constraint_file_text);
    free(c.ids);
    free(c.text);
    free(c.lps);
    free(c.top);
    free(c.prompt_lps);
    free(c.prompt_top);
    return rc;
}
