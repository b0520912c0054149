// mesh.h: building meshes from device lists and axes.
#include <cstddef>

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
    o.rank = -1;
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
        pagoda::mesh::WorldOptions w;
        w.rank = o.rank;
        w.size = o.world_size;
        // A host built before meshes spanned processes asked for none, even under mpirun.
        if (options != nullptr && options->struct_size < offsetof(pagoda_mesh_options_t, world_size) + sizeof(int32_t)) {
            w.rank = 0;
            w.size = 1;
        }
        w.rendezvous = o.rendezvous != nullptr ? o.rendezvous : "";
        w.broadcast = o.bootstrap;
        w.broadcast_user = o.bootstrap_user;
        w.timeout_ms = o.timeout_ms;
        auto world = std::make_shared<const pagoda::mesh::World>(w);
        auto mesh = std::make_unique<pagoda_mesh>();
        mesh->impl = std::make_shared<const pagoda::mesh::Mesh>(o.devices ? o.devices : "", o.axes ? o.axes : "",
                                                                   world->size() > 1 ? world : nullptr);
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
        *count = pagoda::require_handle(mesh, "mesh")->impl->device_count();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_mesh_device_name_v2(const pagoda_mesh_t *mesh, size_t index,
                                                      const char **name) {
    return guarded("pagoda_mesh_device_name_v2", [&] {
        if (name == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "name is NULL");
        *name = nullptr;
        const pagoda::mesh::Mesh &m = *pagoda::require_handle(mesh, "mesh")->impl;
        if (index >= m.device_count())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "device index " + std::to_string(index) +
                                                  " is out of range (the mesh has " +
                                                  std::to_string(m.device_count()) + " devices)");
        *name = m.device_name(index).c_str();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_mesh_world(const pagoda_mesh_t *mesh, int32_t *rank, int32_t *world_size) {
    return guarded("pagoda_mesh_world", [&] {
        if (rank == nullptr || world_size == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "rank or world_size is NULL");
        *rank = 0;
        *world_size = 1;
        const auto &world = pagoda::require_handle(mesh, "mesh")->impl->world();
        if (world != nullptr) {
            *rank = world->rank();
            *world_size = world->size();
        }
        return PAGODA_OK;
    });
}

}  // extern "C"
