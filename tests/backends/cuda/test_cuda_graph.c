/* CUDA graphs through the plugin ABI: the cases every backend with graphs passes
 * (tests/backends/common/graph_cases.h). Without a CUDA device every test is skipped, visibly. */
#include <string.h>

#include "../common/graph_cases.h"

#define CUDA_PLUGIN PAGODA_TEST_CUDA_BACKEND_DIR "/libpagoda-backend-cuda.so"

static int g_no_device = 0;

/* The CUDA backend's table, loaded once; skips the calling test when there is no device. */
static const pagoda_backend_iface_t *graph_backend(void) {
    static pagoda_backend_t *backend = NULL;
    if (backend == NULL && !g_no_device) {
        pagoda_status_t s = pagoda_backend_load(CUDA_PLUGIN, NULL, &backend);
        if (s != PAGODA_OK) {
            const char *message = pagoda_last_error_message();
            if ((s == PAGODA_ERR_NOT_FOUND || s == PAGODA_ERR_BACKEND) && strstr(message, "no CUDA device") != NULL) {
                fprintf(stderr, "skipping: %s\n", message);
                g_no_device = 1;
            } else {
                fail_msg("loading %s failed: %s: %s", CUDA_PLUGIN, pagoda_status_string(s),
                         message);
            }
        }
    }
    if (g_no_device) skip();
    return pagoda_backend_interface(backend);
}

int main(void) {
    const struct CMUnitTest tests[] = {GRAPH_TESTS};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* CTest's SKIP_RETURN_CODE: report "skipped" rather than "passed" without a device. */
    return failed == 0 && g_no_device ? 77 : failed;
}
