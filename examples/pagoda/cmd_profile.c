/* pagoda profile: time a model's decoder layers on a device, or the links between a mesh's
 * devices (--links), and keep them in a cost file, which `pagoda plan --cost-file` and
 * `pagoda place` (the spec's "costs") read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void profile_usage(FILE *out) {
    fputs("Usage: pagoda profile --model PATH --out FILE [options]\n"
          "       pagoda profile --links --out FILE [--device DEVS] [link options]\n"
          "\n"
          "Times whole forward passes of the model on a device (one sequence, logits for its\n"
          "last token, as a serving step runs) for step lengths g, 2g, ..., L and for new tokens\n"
          "after cached ones, and keeps the per-layer times with their fitted context term\n"
          "(TeraPipe Eq. 9) in FILE, adding to what it holds. `pagoda plan --cost-file FILE` and\n"
          "`pagoda place` (\"cluster\": {\"costs\": FILE}) then plan with the measured times.\n"
          "The backend's own settings apply (PAGODA_BACKEND_CPU_CONFIG=devices=2,threads=1 makes\n"
          "each CPU device one thread). Time on an otherwise idle machine.\n"
          "\n"
          "Options:\n"
          "  --model PATH        GGUF file or Hugging Face folder (default: the bundled model)\n"
          "  --out FILE          the cost file to write (JSON)\n"
          "  --device DEVS       the device timed (default cpu:0), or a group (cpu:0-1) timed\n"
          "                      as one tensor-parallel stage, its all-reduces included\n"
          "  --beside DEVS       keep DEVS busy with the same work while timing: devices that\n"
          "                      will serve side by side share memory bandwidth and cache\n"
          "  --max-tokens L      the longest step and context timed (default 128)\n"
          "  --granularity G     step lengths timed are multiples of G (default 8)\n"
          "  --grid N            the context term is fitted on N x N points (default 4)\n"
          "  --repeats N         timed runs per point, the fastest kept (default 3; with\n"
          "                      --links, rounds over the sizes, each size's median kept,\n"
          "                      default 10)\n"
          "  --json              print the entry written (JSON) instead of a summary\n"
          "\n"
          "With --links it times the links between devices instead: a two-device all-reduce and\n"
          "a ping-pong through the backend's collectives, on buffers doubling in size, and fits\n"
          "a latency and a bandwidth to each (plans then price communication with them). Run it\n"
          "where the model will be served: over several processes (mpirun, or ranks started\n"
          "with PAGODA_RANK, PAGODA_WORLD_SIZE and PAGODA_RENDEZVOUS) it times two processes of\n"
          "one machine and two machines; with --device cpu:0-1, two devices of one process.\n"
          "Rank 0 writes FILE.\n"
          "  --min-bytes N       the smallest buffer (default 4096)\n"
          "  --max-bytes N       the largest (default 8388608)\n"
          "  --mesh-timeout MS   over several processes: how long a rank waits for the others\n"
          "  --help              show this help\n",
          out);
}

/* The number after `"key":` in `text`, or -1 when absent. */
static double number_after(const char *text, const char *key) {
    const char *at = strstr(text, key);
    return at ? strtod(at + strlen(key), NULL) : -1.0;
}

/* Prints the device, the first and last t(l, 0) and the fit's errors from the entry. */
static void summarise(const char *entry, long long max_tokens, long long granularity) {
    const char *device = strstr(entry, "\"device\":\"");
    if (device) {
        device += strlen("\"device\":\"");
        fprintf(stderr, "%-22s %.*s\n", "device", (int)strcspn(device, "\""), device);
    }
    const char *times = strstr(entry, "\"no_context_seconds\":[");
    if (times) {
        times += strlen("\"no_context_seconds\":[");
        const double first = strtod(times, NULL);
        const char *end = strchr(times, ']');
        const char *last = end;
        while (last > times && last[-1] != ',' && last[-1] != '[') last--;
        fprintf(stderr, "%-22s %.3f ms (l = %lld)\n", "layer t(l, 0)", first * 1e3, granularity);
        fprintf(stderr, "%-22s %.3f ms (l = %lld)\n", "", strtod(last, NULL) * 1e3, max_tokens);
    }
    fprintf(stderr, "%-22s %.1f %%\n", "context fit error", 100.0 * number_after(entry, "\"context_fit_error\":"));
    fprintf(stderr, "%-22s %.1f %%\n", "t(l, c) fit error", 100.0 * number_after(entry, "\"total_fit_error\":"));
}

static int parse_count(const char *flag, const char *value, long long *out) {
    char *end = NULL;
    errno = 0;
    *out = strtoll(value, &end, 10);
    if (errno || !end || *end || *out <= 0) {
        fprintf(stderr, "pagoda profile: %s wants a positive integer, not '%s'\n", flag, value);
        return 0;
    }
    return 1;
}

/* Prints one call's fit (the object after `"all_reduce":` or `"send":`). */
static void summarise_call(const char *name, const char *call) {
    fprintf(stderr, "  %-12s latency %8.2f us  bandwidth %7.3f GB/s  fit error %4.1f %%\n", name,
            1e6 * number_after(call, "\"latency\":"), 1e-9 * number_after(call, "\"bandwidth\":"),
            100.0 * number_after(call, "\"fit_error\":"));
}

/* The string value of `"key":"` within [from, to), printed as %.*s; "?" when absent. */
static const char *string_in(const char *from, const char *to, const char *key, int *length) {
    const char *at = strstr(from, key);
    if (!at || at >= to) {
        *length = 1;
        return "?";
    }
    at += strlen(key);
    *length = (int)strcspn(at, "\"");
    return at;
}

/* Prints each link's fitted latency and bandwidth from the links' JSON array, whose objects
 * start with "all_reduce" (their keys are written in order). */
static void summarise_links(const char *links) {
    const char *start = strstr(links, "{\"all_reduce\":");
    while (start) {
        const char *next = strstr(start + 1, "{\"all_reduce\":");
        const char *end = next ? next : start + strlen(start);
        int path_length = 0, transport_length = 0;
        const char *path = string_in(start, end, "\"path\":\"", &path_length);
        const char *transport = string_in(start, end, "\"transport\":\"", &transport_length);
        fprintf(stderr, "%.*s (%.*s)\n", path_length, path, transport_length, transport);
        summarise_call("all-reduce", start);
        const char *send = strstr(start, "\"send\":");
        if (send && send < end) summarise_call("send", send);
        start = next;
    }
}

/* --links: a mesh of this process's `devices` over the launch, its links timed. */
static int profile_links(const char *devices, const pagoda_link_profile_options_t *o, long long timeout_ms,
                         const char *out, int json) {
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices;
    mo.timeout_ms = (int64_t)timeout_ms;
    pagoda_mesh_t *mesh = NULL;
    pagoda_status_t s = pagoda_mesh_create(&mo, &mesh);
    if (s != PAGODA_OK) return cli_fail("making the mesh", s);
    char *links = NULL;
    s = pagoda_link_profile(mesh, o, out, &links);
    int32_t rank = 0, world = 1;
    if (s == PAGODA_OK) s = pagoda_mesh_world(mesh, &rank, &world);
    pagoda_mesh_destroy(mesh);
    if (s != PAGODA_OK) {
        pagoda_free(links);
        return cli_fail("timing the links", s);
    }
    if (rank == 0) {
        if (json) printf("%s\n", links);
        else {
            summarise_links(links);
            fprintf(stderr, "%-22s %s\n", "written to", out);
        }
    }
    pagoda_free(links);
    return CLI_EXIT_OK;
}

int cli_profile(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *device = "cpu:0";
    int json = 0, links = 0;
    const char *link_flag = NULL, *layer_flag = NULL; /* the last option of one mode only */
    long long count = 0, timeout_ms = 0;
    pagoda_cost_profile_options_t o;
    pagoda_cost_profile_options_default(&o);
    pagoda_link_profile_options_t lo;
    pagoda_link_profile_options_default(&lo);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            profile_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(f, "--links") == 0) {
            links = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda profile: unknown option or missing value: '%s'\n\n", f);
            profile_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (strcmp(f, "--model") == 0) model = v;
        else if (strcmp(f, "--out") == 0) out = v;
        else if (strcmp(f, "--device") == 0) device = v;
        else if (strcmp(f, "--beside") == 0) o.beside = v;
        else if (strcmp(f, "--min-bytes") == 0 || strcmp(f, "--max-bytes") == 0 ||
                 strcmp(f, "--mesh-timeout") == 0) {
            if (!parse_count(f, v, &count)) return CLI_EXIT_USAGE;
            link_flag = f;
            if (strcmp(f, "--min-bytes") == 0) lo.min_bytes = count;
            else if (strcmp(f, "--max-bytes") == 0) lo.max_bytes = count;
            else timeout_ms = count;
        } else if (strcmp(f, "--max-tokens") == 0 || strcmp(f, "--granularity") == 0 ||
                 strcmp(f, "--grid") == 0 || strcmp(f, "--repeats") == 0) {
            if (!parse_count(f, v, &count)) return CLI_EXIT_USAGE;
            if (strcmp(f, "--repeats") != 0) layer_flag = f;
            if (strcmp(f, "--max-tokens") == 0) o.max_tokens = count;
            else if (strcmp(f, "--granularity") == 0) o.granularity = count;
            else if (count > 1000000) {
                fprintf(stderr, "pagoda profile: %s %lld is too large\n", f, count);
                return CLI_EXIT_USAGE;
            } else if (strcmp(f, "--grid") == 0) o.grid = (int32_t)count;
            else o.repeats = lo.repeats = (int32_t)count;
        } else {
            fprintf(stderr, "pagoda profile: unknown option: '%s'\n\n", f);
            profile_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!out) {
        fputs("pagoda profile: --out is required\n\n", stderr);
        profile_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (links && (model || o.beside || layer_flag)) {
        fprintf(stderr, "pagoda profile: --links times links, not a model: %s does not apply\n",
                model ? "--model" : o.beside ? "--beside" : layer_flag);
        return CLI_EXIT_USAGE;
    }
    if (!links && link_flag) {
        fprintf(stderr, "pagoda profile: %s applies to --links only\n", link_flag);
        return CLI_EXIT_USAGE;
    }
    if (links) return profile_links(device, &lo, timeout_ms, out, json);
    if (!model) model = cli_default_model();
    char *entry = NULL;
    const pagoda_status_t s = pagoda_cost_profile(model, device, &o, out, &entry);
    if (s != PAGODA_OK) return cli_fail("profiling the model's layers", s);
    if (json) printf("%s\n", entry);
    else {
        summarise(entry, (long long)o.max_tokens, (long long)o.granularity);
        fprintf(stderr, "%-22s %s\n", "written to", out);
    }
    pagoda_free(entry);
    return CLI_EXIT_OK;
}
