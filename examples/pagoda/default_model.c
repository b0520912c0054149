/* Where the bundled stories260K is: installed beside the program's data (found from the
 * program's own folder, so any install prefix works), or in the source tree the program was
 * built from. */
#define _POSIX_C_SOURCE 200809L /* readlink */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* <the program's folder>/<PAGODA_INSTALLED_MODEL_FROM_BIN> into `out`; 0 when it cannot be said. */
static int installed_model(char *out, size_t size) {
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) return 0;
    *slash = '\0';
    const int written = snprintf(out, size, "%s/%s", self, PAGODA_INSTALLED_MODEL_FROM_BIN);
    return written > 0 && (size_t)written < size;
}

const char *cli_default_model(void) {
    static char installed[PATH_MAX + 64];
    if (installed_model(installed, sizeof installed) && exists(installed)) return installed;
    if (exists(PAGODA_SOURCE_MODEL)) return PAGODA_SOURCE_MODEL;
    return NULL;
}
