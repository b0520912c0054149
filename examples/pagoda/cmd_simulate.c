/* pagoda simulate: serve Gamma-distributed requests on a multi-model placement (AlpaServe's
 * simulator) and report SLO attainment and latency. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void simulate_usage(FILE *out) {
    fputs("Usage: pagoda simulate --placement FILE [--rate R | --total-rate R] [--cv C] [--slo S]\n"
          "                       [--duration T] [--seed N] [--overhead O] [--no-reject] [--json]\n"
          "\n"
          "Simulates a cluster serving several models: every model's requests arrive as a Gamma\n"
          "process; each group serves its queue first come first served through its pipeline;\n"
          "a request goes to the group holding its model that would finish it first, and is\n"
          "rejected on arrival when it would miss its SLO. Prints SLO attainment (rejected\n"
          "requests count as misses), the rejected share, and latency statistics.\n"
          "\n"
          "Options:\n"
          "  --placement FILE  the placement (JSON, below)\n"
          "  --rate R          requests per second for EACH model (default 1)\n"
          "  --total-rate R    requests per second over ALL models, split evenly (overrides --rate)\n"
          "  --cv C            coefficient of variation of inter-arrival times; 1 = Poisson\n"
          "                    (default 1; AlpaServe's bursty traffic uses 3 or 4)\n"
          "  --slo S           SLO in seconds for models whose entry gives none (default: none)\n"
          "  --duration T      simulated seconds (default 3600)\n"
          "  --seed N          workload seed; the same seed gives the same requests (default 1)\n"
          "  --overhead O      seconds added to every request's latency (default 0)\n"
          "  --no-reject       serve every request; late ones still count as misses\n"
          "  --json            print one JSON object\n"
          "  --help            show this help\n"
          "\n"
          "Placement JSON:\n"
          "  {\"models\": [{\"name\": \"bert-6.7b\", \"slo\": 2.0}, ...],   (\"slo\" in s, optional)\n"
          "   \"groups\": [{\"devices\": [0, 1],         (pipeline x tensor distinct device ids)\n"
          "               \"pipeline\": 2,             (stages)\n"
          "               \"tensor\": 1,               (devices per stage)\n"
          "               \"replicas\": [{\"model\": \"bert-6.7b\",\n"
          "                             \"stage_seconds\": [0.2, 0.2],  (one per stage)\n"
          "                             \"stage_bytes\": [6.7e9, 6.7e9]}]}]}  (optional)\n"
          "  A model appears at most once per group and may have replicas in several groups.\n",
          out);
}

int cli_simulate(int argc, char **argv) {
    const char *placement_path = NULL;
    int json = 0;
    pagoda_simulate_options_t o;
    pagoda_simulate_options_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            simulate_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--json") == 0) json = 1;
        else if (strcmp(f, "--no-reject") == 0) o.reject_late = 0;
        else if (i + 1 < argc && strcmp(f, "--placement") == 0) placement_path = argv[++i];
        else {
            const int w = cli_workload_flag("simulate", argc, argv, &i, 1, &o);
            if (w < 0) return CLI_EXIT_USAGE;
            if (w > 0) continue;
            fprintf(stderr, "pagoda simulate: unknown option or missing value: '%s'\n\n", f);
            simulate_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!placement_path) {
        fputs("pagoda simulate: --placement is required\n\n", stderr);
        simulate_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    char *text = cli_read_file(placement_path);
    if (!text) {
        fprintf(stderr, "pagoda simulate: cannot read '%s'\n", placement_path);
        return CLI_EXIT_FAILED;
    }
    char *result = NULL;
    pagoda_status_t s = pagoda_placement_simulate(text, &o, &result);
    free(text);
    if (s != PAGODA_OK) return cli_fail("simulating the placement", s);
    if (json) {
        printf("%s\n", result);
    } else {
        /* The JSON carries every figure; the human form shows the headline ones. */
        const char *keys[] = {"\"requests\":", "\"slo_attainment\":", "\"rejected_share\":",
                              "\"mean\":", "\"p50\":", "\"p90\":", "\"p99\":"};
        const char *labels[] = {"requests", "SLO attainment", "rejected share", "latency mean (s)",
                                "latency p50 (s)", "latency p90 (s)", "latency p99 (s)"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *at = strstr(result, keys[k]);
            if (!at) continue;
            at += strlen(keys[k]);
            printf("%-18s %.*s\n", labels[k], (int)strcspn(at, ",}"), at);
        }
    }
    pagoda_free(result);
    return CLI_EXIT_OK;
}
