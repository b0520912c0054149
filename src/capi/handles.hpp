// The structs behind the opaque handles of model.h, mesh.h, kv_cache.h and engine.h. Each
// begins with a magic word so entry points can reject NULL, stray and destroyed pointers.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "capi/mesh_placement.hpp"
#include "capi/sized_struct.hpp"
#include "common/error.hpp"
#include "engine/engine.hpp"
#include "kv/kv_cache.hpp"
#include "model/model.hpp"
#include "mesh/mesh.hpp"
#include "tokenizer/tokenizer.hpp"

struct pagoda_model {
    static constexpr uint32_t kMagic = 0x4c444f4du;  // "MODL"
    uint32_t magic = kMagic;
    std::shared_ptr<const pagoda::model::Model> impl;
    std::shared_ptr<const pagoda::tok::Tokenizer> tokenizer;  // NULL when the model carries none
    ~pagoda_model() { magic = 0; }
};

struct pagoda_mesh {
    static constexpr uint32_t kMagic = 0x4853454du;  // "MESH"
    uint32_t magic = kMagic;
    std::shared_ptr<const pagoda::mesh::Mesh> impl;
    ~pagoda_mesh() { magic = 0; }
};

struct pagoda_kv_cache {
    static constexpr uint32_t kMagic = 0x4548434bu;  // "KCHE"
    uint32_t magic = kMagic;
    std::shared_ptr<pagoda::kv::KvCache> impl;
    std::shared_ptr<const pagoda::model::Model> model;  // the model it was sized for
    std::shared_ptr<const pagoda::mesh::Mesh> mesh;      // the devices it lives on
    pagoda::MeshPlacement placement;                     // how the model is laid out on them
    // Whether an engine is using it; shared with that engine, which may outlive this handle.
    std::shared_ptr<std::atomic<bool>> engaged = std::make_shared<std::atomic<bool>>(false);
    ~pagoda_kv_cache() { magic = 0; }
};

struct pagoda_engine {
    static constexpr uint32_t kMagic = 0x4e49474eu;  // "NGIN"
    uint32_t magic = kMagic;
    std::unique_ptr<pagoda::engine::Engine> impl;
    // The cache's "in use" flag, cleared when the engine goes. The engine shares the cache itself
    // (impl holds it), so the host may destroy the cache's handle first.
    std::shared_ptr<std::atomic<bool>> cache_engaged;
    // What each polling thread was last handed: its memory backs that thread's pointers until
    // the thread polls again, so a poll on one thread never frees what another is reading.
    std::mutex poll_mutex;
    std::unordered_map<std::thread::id, std::vector<pagoda::engine::Output>> polled;
    ~pagoda_engine() {
        magic = 0;
        impl.reset();  // the requests and their blocks go first, then the cache is free again
        if (cache_engaged) cache_engaged->store(false);
    }
};

namespace pagoda {

// The handle, or throws Error(INVALID_HANDLE) naming `what`.
template <typename Handle>
Handle *require_handle(Handle *h, const char *what) {
    if (h == nullptr) throw Error(PAGODA_ERR_INVALID_HANDLE, std::string(what) + " is NULL");
    if (h->magic != Handle::kMagic)
        throw Error(PAGODA_ERR_INVALID_HANDLE, std::string(what) + " is not a live handle of its kind");
    return h;
}

}  // namespace pagoda
