// pagoda_server_add_placement: every replica of a placement made from the public calls (model,
// mesh, cache, engine), then handed to the server at once. A replica's handles belong to its
// engine port and go with it.
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/server_handle.hpp"
#include "common/error.hpp"
#include "pagoda/mesh.h"
#include "pagoda/model.h"
#include "pagoda/server.h"
#include "plan/placement.hpp"

using pagoda::fail;
using pagoda::guarded;

namespace pagoda {

namespace {

// A replica's engine and everything it runs on, released in reverse order of making.
class OwningEnginePort final : public HandleEnginePort {
public:
    OwningEnginePort(pagoda_model_t *model, pagoda_mesh_t *mesh, pagoda_kv_cache_t *cache,
                     pagoda_engine_t *engine)
        : HandleEnginePort(engine), model_(model), mesh_(mesh), cache_(cache) {}
    ~OwningEnginePort() override {
        pagoda_engine_destroy(engine_);
        pagoda_kv_cache_destroy(cache_);
        pagoda_mesh_destroy(mesh_);
        pagoda_model_destroy(model_);
    }
    OwningEnginePort(const OwningEnginePort &) = delete;
    OwningEnginePort &operator=(const OwningEnginePort &) = delete;

private:
    pagoda_model_t *model_;
    pagoda_mesh_t *mesh_;
    pagoda_kv_cache_t *cache_;
};

// One replica: its model, a mesh over the group's devices, a cache, an engine. Throws naming
// the group and model, having released what it made.
std::shared_ptr<server::EnginePort> make_replica(const plan::Placement &placement, size_t g,
                                                 const plan::Replica &replica, const std::string &kind,
                                                 const pagoda_engine_options_t *engine_options,
                                                 const pagoda_kv_cache_options_t *kv_options) {
    const plan::PlacementGroup &group = placement.groups[g];
    const plan::PlacedModel &placed = placement.models[replica.model];
    const std::string devices = plan::group_device_list(group, kind), axes = plan::group_axes(group);
    const std::string where = "placement group " + std::to_string(g) + " (" + devices +
                              (axes.empty() ? "" : "; " + axes) + "), model '" + placed.name + "'";
    if (placed.path.empty())
        fail(PAGODA_ERR_INVALID_ARGUMENT, where + ": the placement gives the model no \"path\" to open");
    pagoda_model_t *model = nullptr;
    pagoda_mesh_t *mesh = nullptr;
    pagoda_kv_cache_t *cache = nullptr;
    pagoda_engine_t *engine = nullptr;
    auto release = [&] {
        pagoda_engine_destroy(engine);
        pagoda_kv_cache_destroy(cache);
        pagoda_mesh_destroy(mesh);
        pagoda_model_destroy(model);
    };
    auto check = [&](pagoda_status_t s, const char *what) {
        if (s == PAGODA_OK) return;
        const std::string message = last_error();
        release();
        fail(s, where + ": " + what + ": " + message);
    };
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices.c_str();
    mo.axes = axes.empty() ? nullptr : axes.c_str();
    check(pagoda_mesh_create(&mo, &mesh), "making its mesh");
    check(pagoda_model_open(placed.path.c_str(), nullptr, &model), "opening the model");
    check(pagoda_kv_cache_create(model, mesh, nullptr, kv_options, &cache), "making its KV cache");
    check(pagoda_engine_create(model, mesh, nullptr, cache, engine_options, &engine), "making its engine");
    return std::make_shared<OwningEnginePort>(model, mesh, cache, engine);
}

}  // namespace

}  // namespace pagoda

extern "C" {

PAGODA_API pagoda_status_t pagoda_server_add_placement(pagoda_server_t *server, const char *placement_json,
                                                       const char *device_kind,
                                                       const pagoda_engine_options_t *engine_options,
                                                       const pagoda_kv_cache_options_t *kv_options) {
    return guarded("pagoda_server_add_placement", [&] {
        pagoda_server *s = pagoda::require_handle(server, "server");
        if (placement_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "placement_json is NULL");
        const std::string kind = device_kind != nullptr && device_kind[0] != '\0' ? device_kind : "cpu";
        pagoda::plan::Placement placement = pagoda::plan::placement_from_json(placement_json, "the placement");
        if (!s->impl->models().empty())
            fail(PAGODA_ERR_ALREADY_EXISTS, "a placement is served only by a server with no model yet");
        std::vector<pagoda::server::Server::ReplicaSlot> slots;
        std::vector<std::shared_ptr<pagoda::server::EnginePort>> replicas;
        for (size_t g = 0; g < placement.groups.size(); ++g)
            for (const pagoda::plan::Replica &r : placement.groups[g].replicas) {
                // A failure releases this replica's handles; those made before go with `replicas`.
                replicas.push_back(pagoda::make_replica(placement, g, r, kind, engine_options, kv_options));
                slots.push_back({placement.models[r.model].name, int32_t(g)});
            }
        s->impl->add_placement(std::move(placement), slots, std::move(replicas));
        return PAGODA_OK;
    });
}

}  // extern "C"
