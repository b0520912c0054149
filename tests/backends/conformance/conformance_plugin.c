/* A plugin opened straight from its file with a host table of the suite's own, as the engine's
 * registry would open it but outside the registry: the registry refuses a second instance of a
 * name, and the suite tests the CPU backend's own file beside the registry's CPU reference. The
 * cmocka test and pagoda-conformance both open their plugins under test here. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"

static _Thread_local char g_plugin_error[1024];

static void host_log(void *ctx, pagoda_log_level_t level, const char *message) {
    if (level >= PAGODA_LOG_WARN) fprintf(stderr, "[%s] %s\n", (const char *)ctx, message);
}

static void host_set_error(void *ctx, const char *message) {
    (void)ctx;
    snprintf(g_plugin_error, sizeof g_plugin_error, "%s", message ? message : "(no message)");
}

static void *host_alloc(void *ctx, size_t size, size_t alignment) {
    (void)ctx;
    void *p = NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

static void host_free(void *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

const char *conf_plugin_last_error(void) { return g_plugin_error; }

pagoda_status_t conf_plugin_open(conf_plugin_t *p, const char *label, const char *path,
                                 const char *config, char *why, size_t why_size) {
    memset(p, 0, sizeof *p);
    if (access(path, F_OK) != 0) {
        snprintf(why, why_size, "%s: no such file", path);
        return PAGODA_ERR_NOT_A_PLUGIN;
    }
    p->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (p->library == NULL) {
        snprintf(why, why_size, "dlopen(%s): %s", path, dlerror());
        return PAGODA_ERR_NOT_A_PLUGIN;
    }
    void *symbol = dlsym(p->library, PAGODA_BACKEND_ENTRY_SYMBOL);
    if (symbol == NULL) {
        snprintf(why, why_size, "%s exports no %s", path, PAGODA_BACKEND_ENTRY_SYMBOL);
        conf_plugin_close(p, 1);
        return PAGODA_ERR_NOT_A_PLUGIN;
    }
    pagoda_backend_entry_fn entry;
    memcpy(&entry, &symbol, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    p->host.struct_size = sizeof p->host;
    p->host.abi_version = PAGODA_BACKEND_ABI_VERSION;
    p->host.ctx = (void *)label;
    p->host.log = host_log;
    p->host.set_error = host_set_error;
    p->host.host_alloc = host_alloc;
    p->host.host_free = host_free;
    g_plugin_error[0] = '\0';
    const pagoda_backend_iface_t *iface = NULL;
    const pagoda_status_t s = entry(&p->host, config, &iface);
    if (s != PAGODA_OK) {
        snprintf(why, why_size, "its entry returned %s: %s", pagoda_status_string(s), g_plugin_error);
        conf_plugin_close(p, 1);
        return s;
    }
    if (PAGODA_BACKEND_ABI_MAJOR(iface->abi_version) != PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)) {
        snprintf(why, why_size, "its table says ABI %u.%u, this suite speaks %u.x",
                 (unsigned)PAGODA_BACKEND_ABI_MAJOR(iface->abi_version),
                 (unsigned)(iface->abi_version & 0xffffu),
                 (unsigned)PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION));
        conf_plugin_close(p, 1); /* a table of another major version is not destroyed */
        return PAGODA_ERR_ABI_MISMATCH;
    }
    p->iface = iface;
    return PAGODA_OK;
}

void conf_plugin_close(conf_plugin_t *p, int unload) {
    if (p->iface != NULL) p->iface->destroy(p->iface->self);
    if (unload && p->library != NULL) dlclose(p->library);
    memset(p, 0, sizeof *p);
}
