/* pagoda place: search for a placement of several models on a cluster (AlpaServe's placement
 * search) and print it as the JSON `pagoda simulate --placement` reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void place_usage(FILE *out) {
    fputs("Usage: pagoda place --spec FILE [--rate R | --total-rate R] [--cv C] [--slo S]\n"
          "                    [--duration T] [--seed N] [--json]\n"
          "\n"
          "Searches for a placement of several models on a cluster: which device groups to cut\n"
          "it into, how each group runs (pipeline stages x tensor devices) and which models each\n"
          "group holds, maximising SLO attainment on Gamma-distributed traffic as `pagoda\n"
          "simulate` draws it. Prints the placement (JSON) on stdout, for `pagoda simulate\n"
          "--placement`, and a summary on stderr.\n"
          "\n"
          "Options:\n"
          "  --spec FILE       the cluster, models and search options (JSON, below)\n"
          "  --rate R          requests per second for EACH model without a \"rate\" (default 1)\n"
          "  --total-rate R    requests per second over ALL models, split evenly (overrides --rate)\n"
          "  --cv C            coefficient of variation of inter-arrival times; 1 = Poisson (default 1)\n"
          "  --slo S           SLO in seconds for models without an \"slo\" (default: none)\n"
          "  --duration T      seconds of traffic each candidate is scored on (default 3600)\n"
          "  --seed N          workload seed (default 1)\n"
          "  --json            print only the placement, no summary\n"
          "  --help            show this help\n"
          "\n"
          "Spec JSON (see pagoda_placement_search in pagoda/plan.h):\n"
          "  {\"cluster\": {\"nodes\": 1, \"devices_per_node\": 4, \"device\": \"h100\",\n"
          "               \"memory_bytes\": 16e9},               (nodes, device, memory optional)\n"
          "   \"models\": [{\"name\": \"a\", \"config\": \"path/config.json\", \"slo\": 0.5, \"rate\": 2,\n"
          "               \"path\": \"a.gguf\"},       (path: copied for `pagoda serve --placement`;\n"
          "                                        a Hugging Face folder gives the config too)\n"
          "              {\"name\": \"b\", \"shape\": {\"hidden\": 4096, \"intermediate\": 11008,\n"
          "               \"layers\": 32, \"heads\": 32, \"kv_heads\": 32, \"vocab\": 32000}}],\n"
          "   \"request\": {\"tokens\": 2048},                        (optional)\n"
          "   \"search\": {\"max_pipeline\": 8, \"max_tensor\": 4, \"beam_width\": 1,\n"
          "              \"fast_greedy\": false}}                  (optional)\n",
          out);
}

/* Prints `"key": value` from the search object of the result as "label value" on stderr. */
static void summarise(const char *result, const char *key, const char *label) {
    const char *search = strstr(result, "\"search\":");
    const char *at = search ? strstr(search, key) : NULL;
    if (!at) return;
    at += strlen(key);
    fprintf(stderr, "%-16s %.*s\n", label, (int)strcspn(at, ",}"), at);
}

/* Counts the groups and replicas of the placement: occurrences of their keys. */
static size_t count_keys(const char *text, const char *key) {
    size_t n = 0;
    for (const char *at = strstr(text, key); at; at = strstr(at + 1, key)) n++;
    return n;
}

int cli_place(int argc, char **argv) {
    const char *spec_path = NULL;
    int json = 0;
    pagoda_simulate_options_t o;
    pagoda_simulate_options_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            place_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--json") == 0) json = 1;
        else if (i + 1 < argc && strcmp(f, "--spec") == 0) spec_path = argv[++i];
        else {
            const int w = cli_workload_flag("place", argc, argv, &i, 0, &o);
            if (w < 0) return CLI_EXIT_USAGE;
            if (w > 0) continue;
            fprintf(stderr, "pagoda place: unknown option or missing value: '%s'\n\n", f);
            place_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!spec_path) {
        fputs("pagoda place: --spec is required\n\n", stderr);
        place_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    char *spec = cli_read_file(spec_path);
    if (!spec) {
        fprintf(stderr, "pagoda place: cannot read '%s'\n", spec_path);
        return CLI_EXIT_FAILED;
    }
    char *placement = NULL;
    pagoda_status_t s = pagoda_placement_search(spec, &o, &placement);
    free(spec);
    if (s != PAGODA_OK) return cli_fail("searching for a placement", s);
    printf("%s\n", placement);
    if (!json) {
        fprintf(stderr, "%-16s %zu\n", "groups", count_keys(placement, "\"pipeline\":"));
        fprintf(stderr, "%-16s %zu\n", "replicas", count_keys(placement, "\"stage_seconds\":"));
        summarise(placement, "\"slo_attainment\":", "SLO attainment");
        summarise(placement, "\"requests\":", "requests");
        summarise(placement, "\"simulations\":", "simulations");
        summarise(placement, "\"seconds\":", "search seconds");
    }
    pagoda_free(placement);
    return CLI_EXIT_OK;
}
