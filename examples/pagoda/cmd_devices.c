/* pagoda devices [--json]: discover the backend plugins and describe each one's devices, and
 * say which plugins were skipped and why. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static void devices_usage(FILE *out) {
    fputs("Usage: pagoda devices [--json]\n"
          "\n"
          "Loads every backend plugin found (PAGODA_BACKEND_PATH, then libpagoda's folder) and\n"
          "lists each backend with its devices, then the plugins that were skipped and why.\n"
          "\n"
          "Options:\n"
          "  --json   print one JSON object instead of text\n"
          "  --help   show this help\n",
          out);
}

static const char *kind_name(pagoda_device_kind_t kind) {
    switch (kind) {
        case PAGODA_DEVICE_CPU: return "cpu";
        case PAGODA_DEVICE_GPU: return "gpu";
    }
    return "unknown";
}

/* What we learn about one backend: its device count, or the failure that prevented it. */
typedef struct backend_view {
    pagoda_backend_t *backend;
    int32_t n_devices;
    pagoda_status_t status;
    char error[256]; /* the failing call's message, when status != PAGODA_OK */
} backend_view_t;

/* The thread's error message is only valid until the next pagoda call: keep a copy. */
static void keep_error(char *buf, size_t size) {
    snprintf(buf, size, "%s", pagoda_last_error_message());
}

static void view_backend(size_t index, backend_view_t *v) {
    memset(v, 0, sizeof *v);
    v->status = pagoda_backend_get(index, &v->backend);
    if (v->status == PAGODA_OK) v->status = pagoda_backend_device_count(v->backend, &v->n_devices);
    if (v->status != PAGODA_OK) keep_error(v->error, sizeof v->error);
}

static pagoda_status_t device_info(const backend_view_t *v, int32_t device,
                                   pagoda_device_info_t *info) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    return pagoda_backend_device_info(v->backend, device, info);
}

static int print_text(void) {
    int rc = CLI_EXIT_OK;
    size_t n_backends = pagoda_backend_count(), n_skipped = pagoda_backend_skipped_count();
    if (n_backends == 0) {
        fputs("pagoda: no backends found. Put libpagoda-backend-<name>.so beside libpagoda, or\n"
              "name its folder in PAGODA_BACKEND_PATH.\n",
              stderr);
        rc = CLI_EXIT_FAILED;
    }
    for (size_t i = 0; i < n_backends; i++) {
        backend_view_t v;
        view_backend(i, &v);
        if (v.status != PAGODA_OK) {
            rc = cli_fail("listing a backend", v.status);
            continue;
        }
        const char *name = pagoda_backend_name(v.backend);
        printf("%s%s: %s\n", i ? "\n" : "", name, pagoda_backend_description(v.backend));
        printf("  plugin  %s\n", pagoda_backend_path(v.backend));
        if (v.n_devices == 0) printf("  (no devices)\n");
        for (int32_t d = 0; d < v.n_devices; d++) {
            pagoda_device_info_t info;
            pagoda_status_t status = device_info(&v, d, &info);
            if (status != PAGODA_OK) {
                rc = cli_fail("describing a device", status);
                continue;
            }
            char total[32], free_[32];
            printf("  %s:%d  %s\n", name, (int)d, info.name);
            printf("          kind %s, arch %s, %d compute units, memory %s (%s free)\n",
                   kind_name(info.kind), info.arch, (int)info.compute_units,
                   cli_format_bytes(info.total_memory, total, sizeof total),
                   cli_format_bytes(info.free_memory, free_, sizeof free_));
        }
    }
    if (n_skipped) printf("\nSkipped plugins:\n");
    for (size_t i = 0; i < n_skipped; i++) {
        const char *path = NULL, *message = NULL;
        pagoda_status_t status = PAGODA_OK;
        if (pagoda_backend_skipped(i, &path, &status, &message) != PAGODA_OK) continue;
        printf("  %s\n    %s: %s\n", path, pagoda_status_string(status), message);
    }
    return rc;
}

static void json_error(FILE *out, pagoda_status_t status, const char *message) {
    fputs("{\"status\": ", out);
    cli_json_string(out, pagoda_status_string(status));
    fputs(", \"message\": ", out);
    cli_json_string(out, message);
    fputs("}", out);
}

static int print_json(void) {
    int rc = CLI_EXIT_OK;
    size_t n_backends = pagoda_backend_count(), n_skipped = pagoda_backend_skipped_count();
    if (n_backends == 0) rc = CLI_EXIT_FAILED;

    printf("{\n  \"version\": ");
    cli_json_string(stdout, pagoda_version());
    printf(",\n  \"backends\": [");
    for (size_t i = 0; i < n_backends; i++) {
        backend_view_t v;
        view_backend(i, &v);
        printf("%s\n    {\n      \"name\": ", i ? "," : "");
        cli_json_string(stdout, pagoda_backend_name(v.backend));
        printf(",\n      \"description\": ");
        cli_json_string(stdout, pagoda_backend_description(v.backend));
        printf(",\n      \"path\": ");
        cli_json_string(stdout, pagoda_backend_path(v.backend));
        if (v.status != PAGODA_OK) {
            rc = CLI_EXIT_FAILED;
            printf(",\n      \"error\": ");
            json_error(stdout, v.status, v.error);
        }
        printf(",\n      \"devices\": [");
        for (int32_t d = 0; d < v.n_devices; d++) {
            pagoda_device_info_t info;
            pagoda_status_t status = device_info(&v, d, &info);
            printf("%s\n        {\"index\": %d, ", d ? "," : "", (int)d);
            if (status != PAGODA_OK) {
                char error[256];
                keep_error(error, sizeof error);
                rc = CLI_EXIT_FAILED;
                printf("\"error\": ");
                json_error(stdout, status, error);
                printf("}");
                continue;
            }
            printf("\"name\": ");
            cli_json_string(stdout, info.name);
            printf(", \"kind\": \"%s\", \"arch\": ", kind_name(info.kind));
            cli_json_string(stdout, info.arch);
            printf(", \"compute_units\": %d, \"total_memory\": %" PRIu64
                   ", \"free_memory\": %" PRIu64 ", \"flags\": %u}",
                   (int)info.compute_units, info.total_memory, info.free_memory,
                   (unsigned)info.flags);
        }
        printf("%s]\n    }", v.n_devices ? "\n      " : "");
    }
    printf("%s],\n  \"skipped\": [", n_backends ? "\n  " : "");
    for (size_t i = 0; i < n_skipped; i++) {
        const char *path = NULL, *message = NULL;
        pagoda_status_t status = PAGODA_OK;
        if (pagoda_backend_skipped(i, &path, &status, &message) != PAGODA_OK) continue;
        printf("%s\n    {\"path\": ", i ? "," : "");
        cli_json_string(stdout, path);
        printf(", \"status\": ");
        cli_json_string(stdout, pagoda_status_string(status));
        printf(", \"message\": ");
        cli_json_string(stdout, message);
        printf("}");
    }
    printf("%s]\n}\n", n_skipped ? "\n  " : "");
    return rc;
}

int cli_devices(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            devices_usage(stdout);
            return CLI_EXIT_OK;
        } else {
            fprintf(stderr, "pagoda devices: unknown option '%s'\n\n", argv[i]);
            devices_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }

    pagoda_status_t status = pagoda_backends_discover(NULL, NULL);
    if (status != PAGODA_OK) return cli_fail("discovering backends", status);
    int rc = json ? print_json() : print_text();
    pagoda_backends_unload_all();
    return rc;
}
