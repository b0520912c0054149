#include "backend/plugin_loader.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>

#include "backend/host_services.hpp"
#include "common/error.hpp"

namespace pagoda {

namespace {

bool has_elf_magic(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
           magic[3] == 'F';
}

bool valid_name(const char *name) {
    if (name == nullptr || *name == '\0') return false;
    for (const char *p = name; *p; ++p)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
    return true;
}

// The first required slot that is NULL, or nullptr when all are set.
const char *missing_slot(const pagoda_backend_iface_t &t) {
#define PAGODA_REQUIRE(slot) \
    if (t.slot == nullptr) return #slot;
    PAGODA_REQUIRE(destroy)
    PAGODA_REQUIRE(device_count)
    PAGODA_REQUIRE(device_info)
    PAGODA_REQUIRE(buffer_alloc)
    PAGODA_REQUIRE(buffer_free)
    PAGODA_REQUIRE(stream_create)
    PAGODA_REQUIRE(stream_destroy)
    PAGODA_REQUIRE(stream_synchronize)
    PAGODA_REQUIRE(event_create)
    PAGODA_REQUIRE(event_destroy)
    PAGODA_REQUIRE(event_record)
    PAGODA_REQUIRE(stream_wait_event)
    PAGODA_REQUIRE(event_synchronize)
    PAGODA_REQUIRE(copy)
    PAGODA_REQUIRE(memset)
    PAGODA_REQUIRE(stream_query)
    PAGODA_REQUIRE(event_query)
    PAGODA_REQUIRE(event_elapsed)
    PAGODA_REQUIRE(kernels)
    PAGODA_REQUIRE(kernels->supports)
    PAGODA_REQUIRE(kernels->launch)
#undef PAGODA_REQUIRE
    // A collectives table may end where an older minor version's did (1.7 appended the _ex
    // slots, which the communicator reads only within struct_size), not before.
    if (t.collectives != nullptr &&
        (t.collectives->struct_size < offsetof(pagoda_backend_collectives_t, get_unique_id_ex) ||
         t.collectives->comm_create == nullptr || t.collectives->comm_get_async_error == nullptr))
        return "collectives (a table smaller than ABI 1.0's or without comm_create/comm_get_async_error)";
    if ((t.host_buffer_alloc == nullptr) != (t.host_buffer_free == nullptr))
        return "host_buffer_alloc/host_buffer_free (one without the other)";
    return nullptr;
}

// The optional graph slots (ABI 1.1) come as a set: a host that records a graph must be able to
// end, launch and destroy it.
bool half_filled_graph_slots(const pagoda_backend_iface_t &t) {
    const int set = (t.graph_capture_begin != nullptr) + (t.graph_capture_end != nullptr) +
                    (t.graph_launch != nullptr) + (t.graph_destroy != nullptr);
    return set != 0 && set != 4;
}

// The size of an ABI 1.0 table: everything before the first slot ABI 1.1 appended.
constexpr size_t kAbi10TableSize = offsetof(pagoda_backend_iface_t, graph_capture_begin);

std::string version_text(uint32_t v) {
    return std::to_string(v >> 16) + "." + std::to_string(v & 0xFFFFu);
}

}  // namespace

std::unique_ptr<pagoda_backend> load_plugin(const std::string &path, const char *config) {
    if (!has_elf_magic(path))
        throw Error(PAGODA_ERR_NOT_A_PLUGIN, path + ": not a shared object (no ELF header)");
    std::string dl_error;
    SharedLibrary library = SharedLibrary::open(path, dl_error);
    if (!library)
        throw Error(PAGODA_ERR_NOT_A_PLUGIN, path + ": cannot be loaded: " + dl_error);
    auto entry = reinterpret_cast<pagoda_backend_entry_fn>(library.symbol(PAGODA_BACKEND_ENTRY_SYMBOL));
    if (entry == nullptr)
        throw Error(PAGODA_ERR_NOT_A_PLUGIN, path + ": not a Pagoda backend (no symbol " +
                                                 PAGODA_BACKEND_ENTRY_SYMBOL + ")");

    clear_last_error();
    const pagoda_backend_iface_t *iface = nullptr;
    pagoda_status_t status = entry(&host_services(), config, &iface);
    if (status != PAGODA_OK) {
        std::string reason = last_error();
        if (reason.empty()) reason = "the plugin gave no reason";
        throw Error(status, path + ": the backend failed to start (" +
                                status_name(status) + "): " + reason);
    }
    if (iface == nullptr)
        throw Error(PAGODA_ERR_NOT_A_PLUGIN, path + ": the entry succeeded but returned no table");

    auto backend = std::make_unique<pagoda_backend>();
    // From here on the plugin's state is owned: the destructor calls destroy, then dlclose.
    backend->iface = iface;
    backend->library = std::move(library);
    backend->path = path;
    if (PAGODA_BACKEND_ABI_MAJOR(iface->abi_version) !=
        PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)) {
        // Another major version may lay the table out differently: its destroy slot cannot be
        // trusted, so the plugin's state is left alone (a well-behaved plugin refused already).
        backend->iface = nullptr;
        throw Error(PAGODA_ERR_ABI_MISMATCH,
                    path + ": speaks plugin ABI " + version_text(iface->abi_version) +
                        ", this library speaks " + version_text(PAGODA_BACKEND_ABI_VERSION));
    }
    if (iface->struct_size < kAbi10TableSize) {
        backend->iface = nullptr;
        throw Error(PAGODA_ERR_ABI_MISMATCH,
                    path + ": its interface table is " + std::to_string(iface->struct_size) +
                        " bytes, ABI " + version_text(PAGODA_BACKEND_ABI_VERSION) +
                        " needs at least " + std::to_string(kAbi10TableSize));
    }
    // Read only the bytes the plugin declared; the slots an older minor version lacks stay NULL
    // in the host's copy, which the registry hands out from now on.
    const size_t known = std::min<size_t>(iface->struct_size, sizeof(pagoda_backend_iface_t));
    std::memcpy(&backend->table, iface, known);
    backend->table.struct_size = uint32_t(known);  // what a reader of the copy may rely on
    backend->iface = &backend->table;
    iface = backend->iface;
    if (!valid_name(iface->name))
        throw Error(PAGODA_ERR_NOT_A_PLUGIN,
                    path + ": the backend's name must be lower-case letters, digits and '_'");
    if (const char *slot = missing_slot(*iface))
        throw Error(PAGODA_ERR_NOT_A_PLUGIN,
                    path + ": the backend '" + iface->name + "' leaves the required slot " +
                        slot + " empty");
    if (half_filled_graph_slots(*iface))
        throw Error(PAGODA_ERR_NOT_A_PLUGIN,
                    path + ": the backend '" + iface->name +
                        "' fills only some of graph_capture_begin, graph_capture_end, "
                        "graph_launch and graph_destroy (all four or none)");
    backend->name = iface->name;
    backend->description = iface->description ? iface->description : "";
    return backend;
}

}  // namespace pagoda
