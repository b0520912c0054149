/* pagoda serve: the OpenAI-compatible HTTP server over one model, until SIGINT or SIGTERM.
 *
 * It listens first (printing the address on one line, so that scripts can read the port) and
 * then opens the model: /health answers 503 while it loads and 200 once it serves. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "cli.h"

static void serve_usage(FILE *out) {
    fputs("Usage: pagoda serve [--model PATH] [options]\n"
          "\n"
          "Serves a model over HTTP with OpenAI's API (/v1/completions, /v1/chat/completions,\n"
          "/v1/models) and /health, /tokenize, /detokenize, /apply-template, /metrics, until\n"
          "SIGINT or SIGTERM.\n"
          "\n"
          "Options:\n"
          "  --model PATH              GGUF file or Hugging Face folder (default: the bundled\n"
          "                            stories260K)\n"
          "  --served-model-name NAME  the name clients ask for (default: the file's name)\n"
          "  --host ADDR               address to bind (default 127.0.0.1)\n"
          "  --port N                  TCP port, 0 = any free one (default 8000)\n"
          "  --api-key KEY             require 'Authorization: Bearer KEY' (default: none;\n"
          "                            also read from PAGODA_API_KEY)\n"
          "  --cors-origins LIST       comma-separated origins browsers may call from, or '*'\n"
          "  --max-num-seqs N          sequences in one engine step at most (default 256)\n"
          "  --kv-blocks N             KV cache blocks (default: sized from free memory)\n"
          "  --block-size N            tokens per KV block (default 16)\n"
          "  --drain-timeout MS        on SIGINT/SIGTERM, time requests in flight get to finish\n"
          "                            before they are aborted (default 10000)\n"
          "  --device LIST             devices (default cpu:0)\n"
          "  --axes AXES               how they are arranged, such as tp=2\n"
          "  --mesh-timeout MS         over several processes: how long a rank waits for the\n"
          "                            others before it fails naming them (default 30000)\n"
          "  --plan FILE               a plan written by `pagoda plan --json`\n"
          "  --placement FILE          serve every model of a placement (`pagoda place`'s JSON,\n"
          "                            each model with a \"path\"): a replica per group, requests\n"
          "                            routed and rejected at arrival as `pagoda simulate` does;\n"
          "                            instead of --model, --device, --axes and --plan\n"
          "  --placement-devices KIND  the backend whose devices the placement numbers\n"
          "                            (default cpu: device 3 is cpu:3)\n"
          "  --kernel-choices FILE     run the kernels `pagoda tune` chose (default: the\n"
          "                            backend's own rules)\n"
          "  --help                    show this help\n"
          "\n"
          "Once listening it prints 'pagoda serve: listening on http://HOST:PORT'.\n",
          out);
}

static volatile sig_atomic_t stop_signal = 0;

static void on_signal(int sig) { stop_signal = sig; }

static int parse_num(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "pagoda serve: %s wants an integer from %lld to %lld, not '%s'\n", flag, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

/* The name a model is served under by default: its file or folder name without ".gguf". */
static void default_name(const char *path, char *buf, size_t size) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t n = len - start;
    if (n > 5 && strncmp(path + start + n - 5, ".gguf", 5) == 0) n -= 5;
    if (n >= size) n = size - 1;
    memcpy(buf, path + start, n);
    buf[n] = '\0';
}

/* This process's rank in a launch over several processes, as pagoda_mesh_create() reads it
 * (mesh.h): PAGODA_RANK, else OpenMPI's OMPI_COMM_WORLD_RANK, else 0. Only rank 0 listens. */
static int launch_rank(void) {
    const char *rank = getenv("PAGODA_RANK");
    if (rank == NULL || rank[0] == '\0') rank = getenv("OMPI_COMM_WORLD_RANK");
    return rank != NULL && rank[0] != '\0' ? atoi(rank) : 0;
}

/* Makes and starts the server and prints the line scripts read the port from; NULL on failure
 * (said on stderr). */
static pagoda_server_t *start_listening(const pagoda_server_options_t *so) {
    pagoda_server_t *server = NULL;
    pagoda_status_t s;
    if ((s = pagoda_server_create(so, &server)) != PAGODA_OK) {
        cli_fail("making the server", s);
        return NULL;
    }
    if ((s = pagoda_server_start(server)) != PAGODA_OK) {
        cli_fail("starting the server", s);
        pagoda_server_destroy(server);
        return NULL;
    }
    const char *host = so->host != NULL ? so->host : "127.0.0.1";
    int v6 = strchr(host, ':') != NULL; /* an IPv6 address goes in brackets in a URL */
    printf("pagoda serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", host, v6 ? "]" : "",
           (int)pagoda_server_port(server));
    fflush(stdout);
    return server;
}

/* Stops (letting requests drain) and frees the server; NULL is fine. */
static void stop_server(pagoda_server_t *server) {
    pagoda_status_t s;
    if (server != NULL && (s = pagoda_server_stop(server)) != PAGODA_OK) cli_fail("stopping the server", s);
    pagoda_server_destroy(server);
}

/* Until a signal (returns 1) or the server stops by itself, as when an engine over several
 * processes failed for good (returns 0; the server logged why). */
static int wait_for_signal(const pagoda_server_t *server) {
    while (stop_signal == 0) {
        if (!pagoda_server_is_running(server)) {
            fputs("pagoda serve: the server stopped by itself: an engine failed for good (see its log above)\n",
                  stderr);
            return 0;
        }
        thrd_sleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    }
    printf("pagoda serve: stopping (signal %d)\n", (int)stop_signal);
    fflush(stdout);
    return 1;
}

/* Every model of a placement, each replica on its group's devices; the server owns them. */
static int serve_placement(const pagoda_server_options_t *so, const char *path, const char *devices,
                           const pagoda_engine_options_t *eo, const pagoda_kv_cache_options_t *ko) {
    char *json = cli_read_file(path);
    if (json == NULL) return CLI_EXIT_FAILED;
    pagoda_server_t *server = NULL;
    int rc = CLI_EXIT_FAILED;
    pagoda_status_t s;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if ((server = start_listening(so)) == NULL) goto done;
    if ((s = pagoda_server_add_placement(server, json, devices, eo, ko)) != PAGODA_OK) {
        cli_fail("serving the placement", s);
        goto done;
    }
    printf("pagoda serve: serving the placement %s\n", path);
    fflush(stdout);
    rc = wait_for_signal(server) ? CLI_EXIT_OK : CLI_EXIT_FAILED;
done:
    stop_server(server);
    free(json);
    return rc;
}

int cli_serve(int argc, char **argv) {
    const char *model_path = NULL, *name = NULL, *placement_path = NULL, *placement_devices = "cpu";
    cli_placement_t placement = {0};
    pagoda_server_options_t so;
    pagoda_server_options_default(&so);
    so.port = 8000;
    so.api_key = getenv("PAGODA_API_KEY");
    if (so.api_key != NULL && so.api_key[0] == '\0') so.api_key = NULL;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            serve_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda serve: unknown option or missing value: '%s'\n\n", f);
            serve_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        long long n = 0;
        int ok = 1;
        if (strcmp(f, "--model") == 0) model_path = v;
        else if (strcmp(f, "--served-model-name") == 0) name = v;
        else if (strcmp(f, "--host") == 0) so.host = v;
        else if (strcmp(f, "--port") == 0) { ok = parse_num(f, v, 0, 65535, &n); so.port = (int32_t)n; }
        else if (strcmp(f, "--api-key") == 0) so.api_key = v;
        else if (strcmp(f, "--cors-origins") == 0) so.cors_allowed_origins = v;
        else if (strcmp(f, "--max-num-seqs") == 0) { ok = parse_num(f, v, 1, 65536, &n); eo.max_num_seqs = (int32_t)n; }
        else if (strcmp(f, "--kv-blocks") == 0) { ok = parse_num(f, v, 1, INT32_MAX, &n); ko.num_blocks = n; }
        else if (strcmp(f, "--block-size") == 0) { ok = parse_num(f, v, 1, 128, &n); ko.block_size = (int32_t)n; }
        else if (strcmp(f, "--drain-timeout") == 0) { ok = parse_num(f, v, 0, 86400000, &n); so.drain_timeout_ms = n; }
        else if (strcmp(f, "--kernel-choices") == 0) eo.kernel_choices_file = v;
        else if (strcmp(f, "--placement") == 0) placement_path = v;
        else if (strcmp(f, "--placement-devices") == 0) placement_devices = v;
        else if (cli_placement_flag(&placement, f, v)) continue;
        else {
            fprintf(stderr, "pagoda serve: unknown option '%s'\n\n", f);
            serve_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        if (!ok) return CLI_EXIT_USAGE;
    }
    if (placement_path != NULL) {
        if (model_path != NULL || name != NULL || placement.devices != NULL || placement.axes != NULL ||
            placement.plan_path != NULL) {
            fputs("pagoda serve: --placement names the models and their devices: leave out --model,\n"
                  "--served-model-name, --device, --axes and --plan\n", stderr);
            return CLI_EXIT_USAGE;
        }
        return serve_placement(&so, placement_path, placement_devices, &eo, &ko);
    }
    if (model_path == NULL && (model_path = cli_default_model()) == NULL) {
        fputs("pagoda serve: no --model given and the bundled model is missing\n", stderr);
        return CLI_EXIT_USAGE;
    }
    char name_buf[256];
    if (name == NULL) {
        default_name(model_path, name_buf, sizeof name_buf);
        name = name_buf;
    }

    pagoda_server_t *server = NULL;
    pagoda_model_t *model = NULL;
    pagoda_mesh_t *mesh = NULL;
    pagoda_plan_t *plan = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    int rc = CLI_EXIT_FAILED;
    pagoda_status_t s;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    /* Under mpirun the mesh spans the ranks: rank 0 listens and serves, the others follow its
     * engine's steps until it is gone. */
    const int rank = launch_rank();
    if (rank == 0) {
        if ((server = start_listening(&so)) == NULL) goto done;
    }

    if (cli_open_model(model_path, &placement, &model, &mesh, &plan) != CLI_EXIT_OK) goto done;
    if ((s = pagoda_kv_cache_create(model, mesh, plan, &ko, &cache)) != PAGODA_OK) {
        cli_fail("making the KV cache", s);
        goto done;
    }
    if ((s = pagoda_engine_create(model, mesh, plan, cache, &eo, &engine)) != PAGODA_OK) {
        cli_fail("making the engine", s);
        goto done;
    }
    if (cli_follow_unless_rank0(mesh, engine, &s)) {
        rc = s == PAGODA_OK ? CLI_EXIT_OK : CLI_EXIT_FAILED;
        goto done;
    }
    if (server == NULL) {  /* rank 0 of the mesh, though the environment said otherwise */
        fputs("pagoda serve: the mesh makes this process rank 0, but its launch said another rank\n", stderr);
        goto done;
    }
    if ((s = pagoda_server_add_model(server, name, engine)) != PAGODA_OK) { cli_fail("serving the model", s); goto done; }
    printf("pagoda serve: serving %s as '%s'\n", model_path, name);
    fflush(stdout);

    rc = wait_for_signal(server) ? CLI_EXIT_OK : CLI_EXIT_FAILED;

done:
    stop_server(server);  /* first: it stops using the engine before the engine goes */
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_plan_destroy(plan);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return rc;
}
