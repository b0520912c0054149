/* pagoda-conformance --plugin PATH.so [--device N] [--config STR] [--list] [--only F,...]
 *                    [--reference PATH] [--strict] [--verbose]
 *
 * Runs the backend conformance suite (tests/backends/conformance: every op of ops.h on many
 * random cases, and `supports` on valid and broken descriptors) on one device of a plugin, with
 * the CPU backend as the reference, and prints one line per family of cases, after a first line
 * saying whether libpagoda's registry loads the plugin at all ("load"):
 *
 *   PASS load (libpagoda's registry accepts the plugin)
 *   PASS matmul (120 cases)
 *   FAIL rmsnorm: case 3: reference:0: rmsnorm rows=1 dim=7 ...: out: relative error ...
 *   SKIP moe: case 1 (...): reference: moe_matmul: ... is not supported
 *
 * A SKIP is a family whose every case the plugin refused as unsupported (ops.h lets a plugin
 * leave ops, types and fields out that way); a PASS line counts the cases it refused. With
 * --strict a refusal is a failure. Exit status: 0 when no family failed, 1 when one did, 2 for a
 * usage or loading error, 77 when the plugin finds no device here (nothing was tested). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

typedef struct family {
    const char *name;
    void (*run)(conf_tally_t *tally);
    const char *what;
} family_t;

static const family_t kFamilies[] = {
    {"descriptors", conf_cases_descriptors, "supports() on valid and broken descriptors"},
    {"matmul", conf_cases_matmul, "matmul on f32/bf16/f16 weights"},
    {"embedding", conf_cases_embedding, "embedding"},
    {"rmsnorm", conf_cases_rmsnorm, "rmsnorm, with and without the residual"},
    {"rope", conf_cases_rope, "rope"},
    {"elementwise", conf_cases_elementwise, "silu_mul (SiLU, GELU), add"},
    {"softcap", conf_cases_softcap, "softcap"},
    {"rowwise", conf_cases_rowwise, "argmax, softmax"},
    {"kv_write", conf_cases_kv_write, "kv_write, with and without k_rope"},
    {"paged_attention", conf_cases_paged_attention, "paged_attention"},
    {"paged_attention_odd", conf_cases_paged_attention_odd, "paged_attention, unusual shapes"},
    {"paged_attention_softcap", conf_cases_paged_attention_softcap,
     "paged_attention with soft-capped scores"},
    {"attention_shards", conf_cases_attention_shards,
     "paged_attention over a KV shard with lse, attention_merge"},
    {"copy_blocks", conf_cases_copy_blocks, "copy_blocks, swap_blocks"},
    {"sample", conf_cases_sample, "sample"},
    {"quantized", conf_cases_quantized, "matmul and embedding on Q8_0, Q4_0, Q4_K, Q5_K, Q6_K"},
    {"moe", conf_cases_moe, "moe_route, moe_matmul"},
};
enum { N_FAMILIES = sizeof kFamilies / sizeof kFamilies[0] };

static void usage(FILE *to) {
    fprintf(to,
            "usage: pagoda-conformance --plugin PATH.so [--device N] [--config STR]\n"
            "                          [--only FAMILY[,FAMILY...]] [--reference PATH]\n"
            "                          [--strict] [--verbose] | --list\n"
            "Checks a backend plugin against the CPU backend, op family by op family.\n"
            "  --plugin PATH   the plugin (libpagoda-backend-<name>.so) to test\n"
            "  --device N      which of its devices (default 0)\n"
            "  --config STR    the config string its entry gets (default none)\n"
            "  --only LIST     run only these families (see --list)\n"
            "  --reference P   the CPU backend to compare with (default: found on\n"
            "                  PAGODA_BACKEND_PATH or beside libpagoda)\n"
            "  --strict        a case the plugin refuses as unsupported fails its family\n"
            "  --verbose       print every mismatch and skip as it happens (stderr)\n"
            "Exit status: 0 all pass, 1 a family failed, 2 usage or load error, 77 no device.\n");
}

/* Whether `name` is in the comma-separated `list` (NULL: every family is). */
static int selected(const char *list, const char *name) {
    if (list == NULL) return 1;
    const size_t n = strlen(name);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        const size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

/* Runs one family and prints its line; returns 1 if it passed, 0 if it failed, 2 if skipped. */
static int run_family(const family_t *f, int strict) {
    conf_tally_t tally;
    memset(&tally, 0, sizeof tally);
    char harness_error[1024];
    const int aborted = program_guarded_run(f->run, &tally, harness_error, sizeof harness_error);
    if (aborted) {
        printf("FAIL %s: the harness stopped at case %d: %s\n", f->name, tally.cases, harness_error);
        return 0;
    }
    if (tally.failures > 0) {
        printf("FAIL %s: %s", f->name, tally.first_failure);
        if (tally.failures > 1) printf(" (and %d more mismatches)", tally.failures - 1);
        printf(" [%d cases]\n", tally.cases);
        return 0;
    }
    if (tally.skipped > 0 && tally.compared == 0) {
        printf("%s %s: refused as unsupported: %s\n", strict ? "FAIL" : "SKIP", f->name,
               tally.first_skip);
        return strict ? 0 : 2;
    }
    if (tally.compared == 0) {
        printf("FAIL %s: nothing was compared [%d cases]\n", f->name, tally.cases);
        return 0;
    }
    if (tally.skipped > 0 && strict) {
        printf("FAIL %s: %d of %d cases refused as unsupported (--strict), the first %s\n",
               f->name, tally.skipped, tally.cases, tally.first_skip);
        return 0;
    }
    printf("PASS %s (%d cases", f->name, tally.cases);
    if (tally.skipped > 0)
        printf("; %d refused as unsupported and not checked, the first %s", tally.skipped,
               tally.first_skip);
    printf(")\n");
    return 1;
}

int main(int argc, char **argv) {
    program_options_t o = {NULL, NULL, NULL, 0};
    const char *only = NULL;
    int strict = 0, verbose = 0;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--list") == 0) {
            printf("%-24s %s\n", "load", "libpagoda's registry loads the plugin (required slots, name)");
            for (int f = 0; f < N_FAMILIES; ++f)
                printf("%-24s %s\n", kFamilies[f].name, kFamilies[f].what);
            return 0;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "--strict") == 0) {
            strict = 1;
        } else if (strcmp(arg, "--verbose") == 0) {
            verbose = 1;
        } else if (value != NULL && strcmp(arg, "--plugin") == 0) {
            o.plugin = argv[++i];
        } else if (value != NULL && strcmp(arg, "--config") == 0) {
            o.config = argv[++i];
        } else if (value != NULL && strcmp(arg, "--reference") == 0) {
            o.reference = argv[++i];
        } else if (value != NULL && strcmp(arg, "--only") == 0) {
            only = argv[++i];
        } else if (value != NULL && strcmp(arg, "--device") == 0) {
            char *end = NULL;
            const long d = strtol(argv[++i], &end, 10);
            if (*end != '\0' || d < 0 || d > INT32_MAX) {
                fprintf(stderr, "pagoda-conformance: --device %s is not a device number\n", argv[i]);
                return 2;
            }
            o.device = (int32_t)d;
        } else {
            fprintf(stderr, "pagoda-conformance: unknown or incomplete option %s\n", arg);
            usage(stderr);
            return 2;
        }
    }
    if (o.plugin == NULL) {
        usage(stderr);
        return 2;
    }
    for (const char *p = only; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        const size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        int known = len == 4 && strncmp(p, "load", 4) == 0;
        for (int f = 0; f < N_FAMILIES; ++f)
            known |= strlen(kFamilies[f].name) == len && strncmp(kFamilies[f].name, p, len) == 0;
        if (!known) {
            fprintf(stderr, "pagoda-conformance: --only: no family %.*s (see --list)\n", (int)len, p);
            return 2;
        }
        p = comma != NULL ? comma + 1 : NULL;
    }

    char why[2048];
    const int opened = program_open_plugin(&o, why, sizeof why);
    if (opened == PROGRAM_OPEN_NO_DEVICE) {
        /* Not a failure of the plugin: this machine has nothing for it to drive. */
        printf("SKIP all: %s has no device here: %s\n", o.plugin, why);
        conf_backends_release();
        return 77;
    }
    if (opened != PROGRAM_OPEN_OK || program_open_reference(&o, why, sizeof why) != PROGRAM_OPEN_OK) {
        fprintf(stderr, "pagoda-conformance: %s\n", why);
        conf_backends_release();
        return 2;
    }
    printf("pagoda-conformance: plugin \"%s\" (%s)\n  from %s, device %d (%s)\n"
           "  against the CPU backend from %s\n",
           program_plugin_name(), program_plugin_description(), o.plugin, (int)o.device,
           program_device_name(), program_reference_path());
    fflush(stdout);
    conf_set_reporting(verbose, 1);

    int passed = 0, failed = 0, skipped = 0, run = 0;
    /* First whether a host would load it at all: the harness drives the table directly. */
    if (selected(only, "load")) {
        const int r = program_check_load(&o, why, sizeof why);
        if (r == 1) printf("PASS load (libpagoda's registry accepts the plugin)\n");
        else printf("%s load: %s\n", r == 0 ? "FAIL" : "SKIP", why);
        ++run;
        passed += r == 1;
        failed += r == 0;
        skipped += r == 2;
    }
    for (int f = 0; f < N_FAMILIES; ++f) {
        if (!selected(only, kFamilies[f].name)) continue;
        const int r = run_family(&kFamilies[f], strict);
        fflush(stdout);
        ++run;
        passed += r == 1;
        failed += r == 0;
        skipped += r == 2;
    }
    printf("%d of %d families passed, %d failed, %d skipped\n", passed, run, failed, skipped);
    conf_backends_release();
    return failed > 0 ? 1 : 0;
}
