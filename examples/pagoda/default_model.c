/* Where the bundled stories260K is: installed beside the program's data, or in the source tree
 * the program was built from. */
#include <stdio.h>

#include "cli.h"

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

const char *cli_default_model(void) {
    static const char *const candidates[] = {PAGODA_INSTALLED_MODEL, PAGODA_SOURCE_MODEL};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (exists(candidates[i])) return candidates[i];
    return NULL;
}
