#include "mesh/mesh.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "backend/registry.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "mesh/communicator.hpp"
#include "mesh/process_group.hpp"

namespace pagoda::mesh {

namespace {

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t end = s.find(sep, start);
        parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

// A non-negative decimal that fits int32, or -1.
int32_t parse_count(const std::string &s) {
    int32_t v = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < 0) return -1;
    return v;
}

bool valid_name(const std::string &s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

[[noreturn]] void bad(const std::string &message) { throw Error(PAGODA_ERR_INVALID_ARGUMENT, message); }

}  // namespace

std::vector<DeviceName> parse_device_list(const std::string &list) {
    std::vector<DeviceName> out;
    for (const std::string &item : split(list, ',')) {
        size_t colon = item.find(':');
        if (colon == std::string::npos)
            bad("device '" + item + "' in \"" + list + "\" is not <backend>:<index> (as cpu:0)");
        std::string backend = item.substr(0, colon), range = item.substr(colon + 1);
        if (!valid_name(backend)) bad("device '" + item + "': backend name must be [a-z0-9_]+");
        size_t dash = range.find('-');
        int32_t first = parse_count(range.substr(0, dash));
        int32_t last = dash == std::string::npos ? first : parse_count(range.substr(dash + 1));
        if (first < 0 || last < 0 || last < first)
            bad("device '" + item + "': the index must be N or a range N-M with N <= M");
        for (int32_t i = first; i <= last; ++i) {
            for (const DeviceName &d : out)
                if (d.backend == backend && d.index == i)
                    bad("device " + backend + ":" + std::to_string(i) + " is listed twice in \"" + list + "\"");
            out.push_back({backend, i});
        }
    }
    return out;
}

std::vector<std::pair<std::string, int32_t>> parse_axes(const std::string &axes, size_t device_count) {
    std::vector<std::pair<std::string, int32_t>> out;
    if (axes.empty()) return out;
    size_t product = 1;
    for (const std::string &item : split(axes, ',')) {
        size_t eq = item.find('=');
        std::string name = item.substr(0, eq);
        int32_t size = eq == std::string::npos ? -1 : parse_count(item.substr(eq + 1));
        if (!valid_name(name) || size < 1)
            bad("axis '" + item + "' in \"" + axes + "\" is not <name>=<size> (as tp=4)");
        for (const auto &a : out)
            if (a.first == name) bad("axis '" + name + "' is named twice in \"" + axes + "\"");
        out.emplace_back(name, size);
        product *= static_cast<size_t>(size);
    }
    if (product != device_count)
        bad("axes \"" + axes + "\" span " + std::to_string(product) + " devices but the mesh has " +
            std::to_string(device_count));
    return out;
}

Mesh::Mesh(const std::string &devices, const std::string &axes, std::shared_ptr<const World> world)
    : world_(std::move(world)) {
    std::vector<DeviceName> names = parse_device_list(devices.empty() ? "cpu:0" : devices);
    BackendRegistry &registry = BackendRegistry::instance();
    // Only the plugins the mesh names are loaded: another backend's plugin costs memory even
    // unused (the CUDA one maps cuBLASLt: ~150 MiB resident on a CPU-only run).
    for (const DeviceName &n : names)
        if (registry.find(n.backend) == nullptr) registry.discover(default_backend_search_path(), n.backend);
    for (const DeviceName &n : names) {
        pagoda_backend *b = registry.find(n.backend);
        if (b == nullptr)
            throw Error(PAGODA_ERR_NOT_FOUND, "device " + n.backend + ":" + std::to_string(n.index) +
                                                  ": no backend named '" + n.backend +
                                                  "' is loaded (loaded: " + registry.names() + ")");
        devices_.push_back(std::make_shared<const runtime::Device>(b, n.index));
    }
    if (spans_processes()) {
        agree_with_world(devices.empty() ? "cpu:0" : devices, axes);
    } else {
        for (const auto &d : devices_) names_.push_back(d->name());
    }
    axes_ = parse_axes(axes, names_.size());
}

namespace {

// What each rank tells the others of its part of the mesh: fixed-size fields for all_gather.
struct RankRecord {
    char devices[256];
    char axes[128];
    int32_t device_count;
    int32_t pad;
    int64_t timeout_ms;
};

void copy_field(char *dst, size_t size, const std::string &value, const char *what) {
    if (value.size() >= size)
        bad(std::string("the ") + what + " \"" + value + "\" is too long for a mesh over processes (at most " +
            std::to_string(size - 1) + " characters)");
    std::memset(dst, 0, size);
    std::memcpy(dst, value.data(), value.size());
}

}  // namespace

void Mesh::agree_with_world(const std::string &devices, const std::string &axes) {
    const World &w = *world_;
    RankRecord mine{};
    copy_field(mine.devices, sizeof mine.devices, devices, "device list");
    copy_field(mine.axes, sizeof mine.axes, axes, "axes");
    mine.device_count = int32_t(devices_.size());
    mine.timeout_ms = w.timeout_ms();
    std::vector<RankRecord> all(size_t(w.size()));
    w.bootstrap()->all_gather(&mine, all.data(), sizeof mine);
    const RankRecord &first = all[0];
    const std::string &local_name = devices_.front()->name();
    const std::string backend = local_name.substr(0, local_name.find(':'));
    for (int32_t r = 0; r < w.size(); ++r) {
        const RankRecord &theirs = all[size_t(r)];
        const std::string their_devices(theirs.devices, strnlen(theirs.devices, sizeof theirs.devices));
        auto differs = [&](const std::string &what) {
            bad("the processes of the mesh disagree: rank " + std::to_string(r) + " " + what + " (seen from rank " +
                std::to_string(w.rank()) + ")");
        };
        if (theirs.device_count != first.device_count)
            differs("has " + std::to_string(theirs.device_count) + " devices (" + their_devices + "), rank 0 has " +
                    std::to_string(first.device_count) + "; every process must bring as many");
        if (std::strncmp(theirs.axes, first.axes, sizeof first.axes) != 0)
            differs("has axes \"" + std::string(theirs.axes) + "\", rank 0 \"" + std::string(first.axes) + "\"");
        if (theirs.timeout_ms != first.timeout_ms)
            differs("waits " + std::to_string(theirs.timeout_ms) + " ms for the others, rank 0 " +
                    std::to_string(first.timeout_ms) + " ms");
        for (const DeviceName &n : parse_device_list(their_devices)) {
            if (n.backend != backend)
                differs("names " + n.backend + " devices, this rank " + backend + " ones; a mesh has one backend");
            names_.push_back(n.backend + ":" + std::to_string(n.index) + "@rank" + std::to_string(r));
        }
    }
    if (w.machine_count() > 1) require_network_collectives();
    if (w.rank() == 0)
        log(PAGODA_LOG_INFO, "mesh over " + std::to_string(w.size()) + " processes met at " + w.how() + ", on " +
                                 std::to_string(w.machine_count()) + " machine(s): " + w.describe_machines() +
                                 (w.machine_count() > 1 ? "; collectives between machines go over the network"
                                                        : "; collectives between processes use shared memory"));
}

void Mesh::require_network_collectives() const {
    // Every rank asks its own backend, so that all of them fail at once, by name, instead of
    // the others waiting out their timeout for rank 0's ids.
    pagoda_comm_options_t options = world_comm_options(*world_);
    try {
        new_comm_id(*devices_.front(), &options);
    } catch (const Error &e) {
        throw Error(e.status(), "the mesh's processes run on " + std::to_string(world_->machine_count()) +
                                    " machines (" + world_->describe_machines() + "): " + e.what());
    }
}

int32_t Mesh::axis(const std::string &name) const noexcept {
    for (const auto &[n, size] : axes_)
        if (n == name) return size;
    return 0;
}

}  // namespace pagoda::mesh
