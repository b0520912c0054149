/* The backends the conformance test compares: the reference (the CPU backend through the
 * registry) and the backends under test (the CPU backend with isa=portable, the CUDA backend
 * where it can run), which are opened straight from their files with a
 * host table of our own. The registry would refuse a second "cpu" and hands back the first
 * instance for the same file, but the plugin's entry makes a fresh instance on every call, so
 * the CPU backend can be tested against itself with another configuration. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"

/* ------------------------------------------------------------------------------------------ */
/* The host table given to directly opened plugins                                              */
/* ------------------------------------------------------------------------------------------ */

static _Thread_local char g_direct_error[1024];

static void host_log(void *ctx, pagoda_log_level_t level, const char *message) {
    if (level >= PAGODA_LOG_WARN) fprintf(stderr, "[%s] %s\n", (const char *)ctx, message);
}

static void host_set_error(void *ctx, const char *message) {
    (void)ctx;
    snprintf(g_direct_error, sizeof g_direct_error, "%s", message ? message : "(no message)");
}

static void *host_alloc(void *ctx, size_t size, size_t alignment) {
    (void)ctx;
    void *p = NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (posix_memalign(&p, alignment, size ? size : 1) != 0) return NULL;
    return p;
}

static void host_free(void *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

static const char *direct_last_error(void) { return g_direct_error; }

static const char *registry_last_error(void) { return pagoda_last_error_message(); }

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct direct_backend {
    conf_backend_t backend;
    pagoda_backend_host_t host;
    void *library;
} direct_backend_t;

enum { MAX_UNDER_TEST = 4 };
static direct_backend_t g_direct[MAX_UNDER_TEST];
static const conf_backend_t *g_under_test[MAX_UNDER_TEST];
static size_t g_under_test_count;
static int g_loaded;
static char g_cuda_required_but_missing[1200]; /* non-empty: fail every test that asks */

/* Opens `path` and starts an instance with `config`. Returns 1 on success; otherwise 0 with
 * the reason in `why`. */
static int open_direct(direct_backend_t *d, const char *label, const char *path,
                       const char *config, char *why, size_t why_size) {
    memset(d, 0, sizeof *d);
    if (access(path, F_OK) != 0) {
        snprintf(why, why_size, "%s is not built", path);
        return 0;
    }
    d->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (d->library == NULL) {
        snprintf(why, why_size, "dlopen(%s): %s", path, dlerror());
        return 0;
    }
    pagoda_backend_entry_fn entry;
    void *symbol = dlsym(d->library, PAGODA_BACKEND_ENTRY_SYMBOL);
    memcpy(&entry, &symbol, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    if (symbol == NULL) {
        snprintf(why, why_size, "%s has no %s", path, PAGODA_BACKEND_ENTRY_SYMBOL);
        dlclose(d->library);
        return 0;
    }
    d->host.struct_size = sizeof d->host;
    d->host.abi_version = PAGODA_BACKEND_ABI_VERSION;
    d->host.ctx = (void *)label;
    d->host.log = host_log;
    d->host.set_error = host_set_error;
    d->host.host_alloc = host_alloc;
    d->host.host_free = host_free;
    const pagoda_backend_iface_t *iface = NULL;
    g_direct_error[0] = '\0';
    pagoda_status_t s = entry(&d->host, config, &iface);
    if (s != PAGODA_OK) {
        snprintf(why, why_size, "%s: %s", pagoda_status_string(s), g_direct_error);
        dlclose(d->library);
        return 0;
    }
    int32_t devices = 0;
    if (iface->device_count(iface->self, &devices) != PAGODA_OK || devices < 1) {
        snprintf(why, why_size, "no device (%s)", g_direct_error);
        iface->destroy(iface->self);
        dlclose(d->library);
        return 0;
    }
    d->backend.label = label;
    d->backend.iface = iface;
    d->backend.device = 0;
    d->backend.last_error = direct_last_error;
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
        direct_backend_t *d = &g_direct[i];
        if (d->backend.iface != NULL) d->backend.iface->destroy(d->backend.iface->self);
        if (d->library != NULL) dlclose(d->library);
        memset(d, 0, sizeof *d);
    }
    g_under_test_count = 0;
    g_loaded = 0;
}
