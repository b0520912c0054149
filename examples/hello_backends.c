/* hello_backends: the smallest useful Pagoda host.
 *
 * It checks that the library it runs with matches the headers it was built with, discovers the
 * backend plugins (from PAGODA_BACKEND_PATH, then the folder libpagoda was loaded from), and
 * lists each backend's devices. Every call that can fail returns a pagoda_status_t; on failure
 * pagoda_last_error_message() says what went wrong.
 *
 * Build it against an installed Pagoda with either
 *     cc -std=c11 hello_backends.c $(pkg-config --cflags --libs pagoda) -o hello_backends
 * or CMake: find_package(Pagoda REQUIRED) and target_link_libraries(hello PRIVATE Pagoda::pagoda).
 */
#include <stdio.h>

#include <pagoda/pagoda.h>

static int report(const char *what, pagoda_status_t status) {
    const char *name = pagoda_status_string(status);
    /* The message stays valid until the next pagoda call on this thread, so fetch it last. */
    const char *message = pagoda_last_error_message();
    fprintf(stderr, "hello_backends: %s: %s: %s\n", what, name, message);
    return 1;
}

int main(void) {
    printf("libpagoda %s (built with headers %d.%d.%d)\n", pagoda_version(), PAGODA_VERSION_MAJOR,
           PAGODA_VERSION_MINOR, PAGODA_VERSION_PATCH);
    if (pagoda_version_number() / 10000 != PAGODA_VERSION_MAJOR) {
        fprintf(stderr, "hello_backends: library major version differs from the headers'\n");
        return 1;
    }

    size_t loaded = 0;
    pagoda_status_t status = pagoda_backends_discover(NULL, &loaded);
    if (status != PAGODA_OK) return report("discovering backends", status);
    printf("%zu backend(s) loaded\n", loaded);

    int failed = 0;
    for (size_t i = 0; i < pagoda_backend_count(); i++) {
        pagoda_backend_t *backend = NULL;
        int32_t n_devices = 0;
        if ((status = pagoda_backend_get(i, &backend)) != PAGODA_OK ||
            (status = pagoda_backend_device_count(backend, &n_devices)) != PAGODA_OK) {
            failed = report("listing backends", status);
            continue;
        }
        printf("%s: %d device(s), from %s\n", pagoda_backend_name(backend), (int)n_devices,
               pagoda_backend_path(backend));
        for (int32_t d = 0; d < n_devices; d++) {
            /* Versioned struct: say which size we know, the backend fills what it knows. */
            pagoda_device_info_t info = {0};
            info.struct_size = sizeof info;
            status = pagoda_backend_device_info(backend, d, &info);
            if (status != PAGODA_OK) {
                failed = report("describing a device", status);
                continue;
            }
            printf("  %s:%d  %s (%s)\n", pagoda_backend_name(backend), (int)d, info.name,
                   info.arch);
        }
    }

    /* Backends stay loaded until the process ends or this call; tidy up explicitly. */
    pagoda_backends_unload_all();
    return failed;
}
