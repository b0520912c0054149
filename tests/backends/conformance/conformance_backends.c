/* The backends the conformance test compares: the reference (the CPU backend through the
 * registry) and the backends under test (the CPU backend with isa=portable, the CUDA backend
 * where it can run), which are opened straight from their files with a
 * host table of our own. The registry would refuse a second "cpu" and hands back the first
 * instance for the same file, but the plugin's entry makes a fresh instance on every call, so
 * the CPU backend can be tested against itself with another configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const char *registry_last_error(void) { return pagoda_last_error_message(); }

typedef struct direct_backend {
    conf_backend_t backend;
    conf_plugin_t plugin;
} direct_backend_t;

enum { MAX_UNDER_TEST = 4 };
static direct_backend_t g_direct[MAX_UNDER_TEST];
static const conf_backend_t *g_under_test[MAX_UNDER_TEST];
static size_t g_under_test_count;
static int g_loaded;
static char g_cuda_required_but_missing[1200]; /* non-empty: fail every test that asks */

/* Opens `path` with `config` and checks it has a device. Returns 1 on success; otherwise 0
 * with the reason in `why`. */
static int open_direct(direct_backend_t *d, const char *label, const char *path,
                       const char *config, char *why, size_t why_size) {
    memset(d, 0, sizeof *d);
    if (conf_plugin_open(&d->plugin, label, path, config, why, why_size) != PAGODA_OK) return 0;
    const pagoda_backend_iface_t *iface = d->plugin.iface;
    int32_t devices = 0;
    if (iface->device_count(iface->self, &devices) != PAGODA_OK || devices < 1) {
        snprintf(why, why_size, "no device (%s)", conf_plugin_last_error());
        conf_plugin_close(&d->plugin, 1);
        return 0;
    }
    d->backend.label = label;
    d->backend.iface = iface;
    d->backend.device = 0;
    d->backend.last_error = conf_plugin_last_error;
    return 1;
}

const conf_backend_t *conf_reference(void) {
    static conf_backend_t reference;
    if (reference.iface == NULL) {
        reference.label = "cpu (reference)";
        reference.iface = test_cpu_iface();
        reference.device = 0;
        reference.last_error = registry_last_error;
    }
    return &reference;
}

static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "1") == 0;
}

const conf_backend_t *const *conf_backends_under_test(size_t *count) {
    if (!g_loaded) {
        g_loaded = 1;
        char why[1200];
        /* (a) The CPU backend's portable kernels against its default (native) ones. */
        if (!open_direct(&g_direct[0], "cpu isa=portable",
                         PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so",
                         "threads=2,isa=portable", why, sizeof why))
            fail_msg("opening the CPU backend a second time failed: %s", why);
        g_under_test[g_under_test_count++] = &g_direct[0].backend;

        /* (b) The CUDA backend when built and a device is present. */
#ifdef PAGODA_CONFORMANCE_CUDA_PLUGIN
        const int have_cuda = open_direct(&g_direct[1], "cuda", PAGODA_CONFORMANCE_CUDA_PLUGIN,
                                          NULL, why, sizeof why);
#else
        const int have_cuda = 0;
        snprintf(why, sizeof why, "this build has no CUDA backend (PAGODA_WITH_CUDA=OFF)");
#endif
        if (have_cuda) {
            g_under_test[g_under_test_count++] = &g_direct[1].backend;
        } else {
            fprintf(stderr, "skipping cuda: %s\n", why);
            if (env_flag("PAGODA_CONFORMANCE_REQUIRE_CUDA"))
                snprintf(g_cuda_required_but_missing, sizeof g_cuda_required_but_missing, "%s",
                         why);
        }
        for (size_t i = 0; i < g_under_test_count; ++i)
            fprintf(stderr, "conformance: testing %s against %s\n", g_under_test[i]->label,
                    conf_reference()->label);
    }
    if (g_cuda_required_but_missing[0] != '\0')
        fail_msg("PAGODA_CONFORMANCE_REQUIRE_CUDA=1 but the CUDA backend cannot run: %s",
                 g_cuda_required_but_missing);
    *count = g_under_test_count;
    return g_under_test;
}

void conf_backends_release(void) {
    for (size_t i = 0; i < MAX_UNDER_TEST; ++i) {
        conf_plugin_close(&g_direct[i].plugin, 1);
        memset(&g_direct[i], 0, sizeof g_direct[i]);
    }
    g_under_test_count = 0;
    g_loaded = 0;
}
