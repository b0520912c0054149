// The host-facing backend functions of backend.h: argument checks and the guard, no logic.
#include "backend/registry.hpp"
#include "capi/guard.hpp"
#include "pagoda/backend.h"

using pagoda::BackendRegistry;
using pagoda::checked_backend;
using pagoda::fail;
using pagoda::guarded;

extern "C" {

PAGODA_API pagoda_status_t pagoda_backend_load(const char *path, const char *config,
                                               pagoda_backend_t **out) {
    return guarded("pagoda_backend_load", [&] {
        if (path == nullptr || *path == '\0') fail(PAGODA_ERR_INVALID_ARGUMENT, "path is NULL or empty");
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = BackendRegistry::instance().load(path, config);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_backends_discover(const char *search_path,
                                                    size_t *loaded_count) {
    return guarded("pagoda_backends_discover", [&] {
        if (search_path != nullptr && *search_path == '\0')
            fail(PAGODA_ERR_INVALID_ARGUMENT, "search_path is empty (pass NULL for the default)");
        std::string path = search_path ? search_path : pagoda::default_backend_search_path();
        size_t n = BackendRegistry::instance().discover(path);
        if (loaded_count != nullptr) *loaded_count = n;
        return PAGODA_OK;
    });
}

PAGODA_API size_t pagoda_backend_count(void) { return BackendRegistry::instance().count(); }

PAGODA_API pagoda_status_t pagoda_backend_get(size_t index, pagoda_backend_t **out) {
    return guarded("pagoda_backend_get", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        pagoda_backend *b = BackendRegistry::instance().at(index);
        if (b == nullptr)
            fail(PAGODA_ERR_NOT_FOUND, "index " + std::to_string(index) + " is past the " +
                                           std::to_string(BackendRegistry::instance().count()) +
                                           " loaded backends");
        *out = b;
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_backend_find(const char *name, pagoda_backend_t **out) {
    return guarded("pagoda_backend_find", [&] {
        if (name == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "name is NULL");
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        pagoda_backend *b = BackendRegistry::instance().find(name);
        if (b == nullptr)
            fail(PAGODA_ERR_NOT_FOUND, std::string("no backend named '") + name +
                                           "' is loaded (loaded: " +
                                           BackendRegistry::instance().names() + ")");
        *out = b;
        return PAGODA_OK;
    });
}

PAGODA_API const char *pagoda_backend_name(const pagoda_backend_t *backend) {
    const pagoda_backend *b = checked_backend(backend);
    return b ? b->name.c_str() : nullptr;
}

PAGODA_API const char *pagoda_backend_description(const pagoda_backend_t *backend) {
    const pagoda_backend *b = checked_backend(backend);
    return b ? b->description.c_str() : nullptr;
}

PAGODA_API const char *pagoda_backend_path(const pagoda_backend_t *backend) {
    const pagoda_backend *b = checked_backend(backend);
    return b ? b->path.c_str() : nullptr;
}

PAGODA_API pagoda_status_t pagoda_backend_device_count(const pagoda_backend_t *backend,
                                                       int32_t *count) {
    return guarded("pagoda_backend_device_count", [&] {
        const pagoda_backend *b = checked_backend(backend);
        if (b == nullptr) fail(PAGODA_ERR_INVALID_HANDLE, "backend is NULL or not a loaded backend");
        if (count == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "count is NULL");
        int32_t n = 0;
        if (pagoda_status_t s = b->iface->device_count(b->iface->self, &n); s != PAGODA_OK)
            fail(s, pagoda::last_error());
        *count = n;
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_backend_device_info(const pagoda_backend_t *backend,
                                                      int32_t device,
                                                      pagoda_device_info_t *info) {
    return guarded("pagoda_backend_device_info", [&] {
        const pagoda_backend *b = checked_backend(backend);
        if (b == nullptr) fail(PAGODA_ERR_INVALID_HANDLE, "backend is NULL or not a loaded backend");
        if (info == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "info is NULL");
        if (info->struct_size < sizeof(pagoda_device_info_t))
            fail(PAGODA_ERR_INVALID_ARGUMENT, "info->struct_size is " +
                                                  std::to_string(info->struct_size) +
                                                  "; set it to sizeof(pagoda_device_info_t)");
        int32_t n = 0;
        if (pagoda_status_t s = b->iface->device_count(b->iface->self, &n); s != PAGODA_OK)
            fail(s, pagoda::last_error());
        if (device < 0 || device >= n)
            fail(PAGODA_ERR_NOT_FOUND, "backend '" + b->name + "' has no device " +
                                           std::to_string(device) + " (it has " +
                                           std::to_string(n) + ")");
        pagoda_device_info_t filled{};
        filled.struct_size = sizeof filled;
        if (pagoda_status_t s = b->iface->device_info(b->iface->self, device, &filled);
            s != PAGODA_OK)
            fail(s, pagoda::last_error());
        *info = filled;
        return PAGODA_OK;
    });
}

PAGODA_API const pagoda_backend_iface_t *pagoda_backend_interface(const pagoda_backend_t *backend) {
    const pagoda_backend *b = checked_backend(backend);
    return b ? b->iface : nullptr;
}

PAGODA_API size_t pagoda_backend_skipped_count(void) {
    return BackendRegistry::instance().skipped_count();
}

PAGODA_API pagoda_status_t pagoda_backend_skipped(size_t index, const char **path,
                                                  pagoda_status_t *status,
                                                  const char **message) {
    return guarded("pagoda_backend_skipped", [&] {
        const pagoda::SkippedPlugin *s = BackendRegistry::instance().skipped(index);
        if (s == nullptr)
            fail(PAGODA_ERR_NOT_FOUND, "no skipped plugin at index " + std::to_string(index));
        if (path) *path = s->path.c_str();
        if (status) *status = s->status;
        if (message) *message = s->message.c_str();
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_backends_unload_all(void) { BackendRegistry::instance().unload_all(); }

}  // extern "C"
