/* Output helpers shared by the subcommands: error reports, JSON strings, byte counts. */
#include "cli.h"

int cli_fail(const char *what, pagoda_status_t status) {
    const char *name = pagoda_status_string(status);
    const char *message = pagoda_last_error_message(); /* last: valid until the next call */
    fprintf(stderr, "pagoda: %s: %s%s%s\n", what, name, message[0] ? ": " : "", message);
    return CLI_EXIT_FAILED;
}

void cli_json_string(FILE *out, const char *s) {
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
            case '"': fputs("\\\"", out); break;
            case '\\': fputs("\\\\", out); break;
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            default:
                /* Other control characters are escaped; UTF-8 sequences pass through. */
                if (*p < 0x20)
                    fprintf(out, "\\u%04x", (unsigned)*p);
                else
                    fputc(*p, out);
        }
    }
    fputc('"', out);
}

const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = (double)bytes;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0)
        snprintf(buf, size, "%u B", (unsigned)bytes);
    else
        snprintf(buf, size, "%.1f %s", value, units[unit]);
    return buf;
}
