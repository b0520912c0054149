/* pagoda-bench-stream: tokens per second of one streamed request through the C API, the baseline
 * the bindings' streaming benchmarks are set against (same flags, same output lines).
 *
 *   pagoda-bench-stream --model PATH [--prompt TEXT] [--max-tokens N] [--repeats R] [--paced]
 *
 * With --paced, each repeat waits for a line on standard input and they go on until its end
 * (--repeats is then unused): tests/bench/bindings_overhead.py runs the C and binding benches
 * side by side this way, one request of each in turn.
 *
 * Each repeat submits the prompt (greedy, ignoring end-of-sequence), then steps and polls until
 * the request finishes, reading every output's tokens and text as a streaming host would, and
 * prints `tokens_per_s <float>`. The model, cache and engine are made once, before the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pagoda/pagoda.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int check(pagoda_status_t status, const char *what) {
    if (status == PAGODA_OK) return 0;
    fprintf(stderr, "pagoda-bench-stream: %s: %s: %s\n", what, pagoda_status_string(status),
            pagoda_last_error_message());
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: pagoda-bench-stream --model PATH [--prompt TEXT] [--max-tokens N] "
                    "[--repeats R] [--paced]\n");
    return 2;
}

/* One timed request; returns tokens per second, or a negative value on failure. */
static double stream_once(pagoda_engine_t *engine, const char *prompt,
                          const pagoda_request_options_t *options, unsigned long *sink) {
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    uint64_t id;
    size_t tokens = 0;
    double start = now_seconds();
    if (check(pagoda_engine_submit_text(engine, prompt, strlen(prompt), options, &id), "submit"))
        return -1;
    for (int finished = 0; !finished;) {
        if (check(pagoda_engine_step(engine), "step")) return -1;
        pagoda_status_t st;
        while ((st = pagoda_engine_poll(engine, &out)) == PAGODA_OK) {
            tokens += out.n_tokens;
            /* What a streaming host does with the text: look at every byte of it. */
            for (size_t i = 0; i < out.text_len; i++) *sink += (unsigned char)out.text[i];
            if (out.request_finished) finished = 1;
        }
        if (st != PAGODA_ERR_EMPTY && check(st, "poll")) return -1;
    }
    return (double)tokens / (now_seconds() - start);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "Once upon a time";
    int max_tokens = 256, repeats = 5, paced = 0;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--paced") == 0) {
            paced = 1;
            continue;
        }
        if (i + 1 >= argc) return usage();
        const char *value = argv[++i];
        if (strcmp(flag, "--model") == 0) model_path = value;
        else if (strcmp(flag, "--prompt") == 0) prompt = value;
        else if (strcmp(flag, "--max-tokens") == 0) max_tokens = atoi(value);
        else if (strcmp(flag, "--repeats") == 0) repeats = atoi(value);
        else return usage();
    }
    if (model_path == NULL || max_tokens <= 0 || repeats <= 0) return usage();

    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    int failed = check(pagoda_model_open(model_path, NULL, &model), "open the model") ||
                 check(pagoda_mesh_create(NULL, &mesh), "make the mesh") ||
                 check(pagoda_kv_cache_create(model, mesh, NULL, NULL, &cache), "make the cache") ||
                 check(pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine), "make the engine");
    pagoda_request_options_t options;
    pagoda_request_options_default(&options);
    options.temperature = 0;
    options.max_tokens = max_tokens;
    options.flags |= PAGODA_REQUEST_IGNORE_EOS;
    unsigned long sink = 0;
    char go_line[64];
    for (int r = 0; (paced ? fgets(go_line, sizeof go_line, stdin) != NULL : r < repeats) && !failed;
         r++) {
        double rate = stream_once(engine, prompt, &options, &sink);
        if (rate < 0) failed = 1;
        else printf("tokens_per_s %.1f\n", rate);
        fflush(stdout);
    }
    if (sink == 1) fputc('\n', stderr); /* keeps the text reads from being optimised away */
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return failed;
}
