// mesh.h: building meshes from device lists and axes.
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "pagoda/mesh.h"

using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_mesh_options_t default_mesh_options() {
    pagoda_mesh_options_t o{};
    o.struct_size = sizeof(o);
    return o;
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_mesh_options_init(pagoda_mesh_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_mesh_options());
}

PAGODA_API pagoda_status_t pagoda_mesh_create(const pagoda_mesh_options_t *options,
                                              pagoda_mesh_t **out) {
    return guarded("pagoda_mesh_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        pagoda_mesh_options_t o = pagoda::read_sized(options, default_mesh_options(), "options");
        auto mesh = std::make_unique<pagoda_mesh>();
        mesh->impl = std::make_shared<const pagoda::mesh::Mesh>(o.devices ? o.devices : "",
                                                                   o.axes ? o.axes : "");
        *out = mesh.release();
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_mesh_destroy(pagoda_mesh_t *mesh) {
    if (mesh != nullptr && mesh->magic == pagoda_mesh::kMagic) delete mesh;
}

// The queries without a status answer what their _v2 answers (0 or NULL on failure).
PAGODA_API size_t pagoda_mesh_device_count(const pagoda_mesh_t *mesh) {
    size_t count = 0;
    pagoda_mesh_device_count_v2(mesh, &count);
    return count;
}

PAGODA_API const char *pagoda_mesh_device_name(const pagoda_mesh_t *mesh, size_t index) {
    const char *name = nullptr;
    pagoda_mesh_device_name_v2(mesh, index, &name);
    return name;
}

PAGODA_API pagoda_status_t pagoda_mesh_device_count_v2(const pagoda_mesh_t *mesh, size_t *count) {
    return guarded("pagoda_mesh_device_count_v2", [&] {
        if (count == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "count is NULL");
        *count = 0;
        *count = pagoda::require_handle(mesh, "mesh")->impl->devices().size();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_mesh_device_name_v2(const pagoda_mesh_t *mesh, size_t index,
                                                      const char **name) {
    return guarded("pagoda_mesh_device_name_v2", [&] {
        if (name == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "name is NULL");
        *name = nullptr;
        const auto &devices = pagoda::require_handle(mesh, "mesh")->impl->devices();
        if (index >= devices.size())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "device index " + std::to_string(index) +
                                                  " is out of range (the mesh has " +
                                                  std::to_string(devices.size()) + " devices)");
        *name = devices[index]->name().c_str();
        return PAGODA_OK;
    });
}

}  // extern "C"
