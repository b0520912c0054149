/* What `pagoda simulate` and `pagoda place` share: the workload's command-line flags and
 * reading a JSON file whole. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Parses a whole argument as a number; 0 on failure. */
static int parse_double(const char *text, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0') return 0;
    *out = v;
    return 1;
}

int cli_workload_flag(const char *command, int argc, char **argv, int *i, int with_overhead,
                      pagoda_simulate_options_t *o) {
    const char *f = argv[*i];
    if (*i + 1 >= argc) return 0;
    if (strcmp(f, "--seed") == 0) {
        const char *v = argv[++*i];
        char *end = NULL;
        errno = 0;
        unsigned long long seed = strtoull(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || v[0] == '-') {
            fprintf(stderr, "pagoda %s: --seed wants a non-negative integer, not '%s'\n", command, v);
            return -1;
        }
        o->seed = (uint64_t)seed;
        return 1;
    }
    double *field = NULL;
    if (strcmp(f, "--rate") == 0) field = &o->rate_per_model;
    else if (strcmp(f, "--total-rate") == 0) field = &o->total_rate;
    else if (strcmp(f, "--cv") == 0) field = &o->cv;
    else if (strcmp(f, "--slo") == 0) field = &o->slo_seconds;
    else if (strcmp(f, "--duration") == 0) field = &o->duration_seconds;
    else if (with_overhead && strcmp(f, "--overhead") == 0) field = &o->overhead_seconds;
    if (!field) return 0;
    const char *v = argv[++*i];
    if (!parse_double(v, field)) {
        fprintf(stderr, "pagoda %s: %s wants a number, not '%s'\n", command, f, v);
        return -1;
    }
    return 1;
}

char *cli_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len + 1 < cap) break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf) return NULL;
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}
