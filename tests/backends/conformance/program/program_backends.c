/* The backends pagoda-conformance compares: the plugin under test, opened straight from its file
 * (conf_plugin_open: outside the registry, so that any plugin may be tested, the CPU backend's
 * own file included), and the reference, the CPU backend loaded through libpagoda's registry:
 * from --reference, else from the folders of PAGODA_BACKEND_PATH, else from libpagoda's own
 * folder, which is where the build and an installation put it. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program.h"

static const char *registry_last_error(void) { return pagoda_last_error_message(); }

static conf_plugin_t g_opened;
static conf_backend_t g_plugin, g_reference;
static const conf_backend_t *g_under_test[1];
static char g_label[160], g_device_name[160], g_reference_path[4096];

int program_open_plugin(const program_options_t *o, char *why, size_t why_size) {
    const pagoda_status_t s = conf_plugin_open(&g_opened, "plugin", o->plugin, o->config, why, why_size);
    if (s != PAGODA_OK) return s == PAGODA_ERR_NOT_FOUND ? PROGRAM_OPEN_NO_DEVICE : PROGRAM_OPEN_FAILED;
    const pagoda_backend_iface_t *iface = g_opened.iface;
    g_plugin.iface = iface; /* set first: conf_backends_release destroys it on any path below */
    int32_t count = 0;
    if (iface->device_count(iface->self, &count) != PAGODA_OK || count < 1) {
        snprintf(why, why_size, "it reports no device (%s)", conf_plugin_last_error());
        return PROGRAM_OPEN_NO_DEVICE;
    }
    if (o->device < 0 || o->device >= count) {
        snprintf(why, why_size, "--device %d, but it has %d device(s)", (int)o->device, (int)count);
        return PROGRAM_OPEN_FAILED;
    }
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (iface->device_info(iface->self, o->device, &info) == PAGODA_OK)
        snprintf(g_device_name, sizeof g_device_name, "%s", info.name);
    snprintf(g_label, sizeof g_label, "%s:%d", iface->name, (int)o->device);
    g_plugin.label = g_label;
    g_plugin.device = o->device;
    g_plugin.last_error = conf_plugin_last_error;
    g_under_test[0] = &g_plugin;
    return PROGRAM_OPEN_OK;
}

/* `<folder>/libpagoda-backend-cpu.so` when that file exists. */
static int cpu_plugin_in(const char *folder, size_t len, char *out, size_t out_size) {
    if (len == 0) return 0;
    snprintf(out, out_size, "%.*s/libpagoda-backend-cpu.so", (int)len, folder);
    return access(out, F_OK) == 0;
}

int program_open_reference(const program_options_t *o, char *why, size_t why_size) {
    char path[4096] = "";
    int found = 0;
    if (o->reference != NULL) {
        snprintf(path, sizeof path, "%s", o->reference);
        found = 1;
    }
    const char *env = getenv("PAGODA_BACKEND_PATH");
    for (const char *p = env; !found && p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        const size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
        found = cpu_plugin_in(p, len, path, sizeof path);
        p = colon != NULL ? colon + 1 : NULL;
    }
    Dl_info lib;
    pagoda_status_t (*in_libpagoda)(const char *, const char *, pagoda_backend_t **) =
        pagoda_backend_load;
    void *address;
    memcpy(&address, &in_libpagoda, sizeof address); /* as POSIX allows; ISO C has no cast */
    if (!found && dladdr(address, &lib) != 0 && lib.dli_fname != NULL) {
        const char *slash = strrchr(lib.dli_fname, '/');
        if (slash != NULL) found = cpu_plugin_in(lib.dli_fname, (size_t)(slash - lib.dli_fname), path, sizeof path);
    }
    if (!found) {
        snprintf(why, why_size,
                 "no libpagoda-backend-cpu.so on PAGODA_BACKEND_PATH or beside libpagoda; "
                 "give its path with --reference");
        return PROGRAM_OPEN_FAILED;
    }
    pagoda_backend_t *cpu = NULL;
    const pagoda_status_t s = pagoda_backend_load(path, NULL, &cpu);
    if (s != PAGODA_OK) {
        snprintf(why, why_size, "loading the CPU backend %s: %s: %s", path, pagoda_status_string(s),
                 pagoda_last_error_message());
        return PROGRAM_OPEN_FAILED;
    }
    snprintf(g_reference_path, sizeof g_reference_path, "%s", pagoda_backend_path(cpu));
    g_reference.label = "cpu (reference)";
    g_reference.iface = pagoda_backend_interface(cpu);
    g_reference.device = 0;
    g_reference.last_error = registry_last_error;
    return PROGRAM_OPEN_OK;
}

int program_check_load(const program_options_t *o, char *why, size_t why_size) {
    pagoda_backend_t *loaded = NULL;
    const pagoda_status_t s = pagoda_backend_load(o->plugin, o->config, &loaded);
    if (s == PAGODA_OK) return 1;
    snprintf(why, why_size, "%s: %s", pagoda_status_string(s), pagoda_last_error_message());
    /* Another file of the same name is loaded (the reference, when testing a copy of the CPU
     * backend): the registry keeps names unique; nothing is wrong with the plugin. */
    return s == PAGODA_ERR_ALREADY_EXISTS ? 2 : 0;
}

const char *program_plugin_name(void) { return g_plugin.iface ? g_plugin.iface->name : "?"; }
const char *program_plugin_description(void) {
    return g_plugin.iface && g_plugin.iface->description ? g_plugin.iface->description : "";
}
const char *program_device_name(void) { return g_device_name; }
const char *program_reference_path(void) { return g_reference_path; }

/* conformance.h's backends, as the harness asks for them. */
const conf_backend_t *conf_reference(void) { return &g_reference; }

const conf_backend_t *const *conf_backends_under_test(size_t *count) {
    *count = g_under_test[0] != NULL ? 1 : 0;
    return g_under_test;
}

void conf_backends_release(void) {
    /* The library stays open: a plugin's threads may still be winding down. */
    conf_plugin_close(&g_opened, 0);
    memset(&g_plugin, 0, sizeof g_plugin);
    g_under_test[0] = NULL;
    pagoda_backends_unload_all();
}
