// A mesh: devices named `<backend>:<index>`, listed with commas and ranges ("cuda:0-3,cuda:6"),
// and named axes over them ("pp=2,tp=4") whose sizes multiply to the device count. A mesh over
// several processes (world.hpp) is every rank's list, rank after rank: each process names its
// own devices, and all must name as many, of one backend, with the same axes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mesh/world.hpp"
#include "runtime/device.hpp"

namespace pagoda::mesh {

struct DeviceName {
    std::string backend;
    int32_t index = 0;
};

// Throws Error(INVALID_ARGUMENT) naming the item for a malformed list, and for a device named
// twice.
std::vector<DeviceName> parse_device_list(const std::string &list);
// Throws Error(INVALID_ARGUMENT) for malformed axes, a repeated name or sizes whose product is
// not `device_count`. An empty string gives no axes: the plan then decides the layout.
std::vector<std::pair<std::string, int32_t>> parse_axes(const std::string &axes, size_t device_count);

class Mesh {
public:
    // Resolves each device in the loaded backends, discovering backends first when none is
    // loaded. Throws NOT_FOUND naming a backend that is not loaded or a device it lacks. With a
    // world of several processes, every rank checks with the others that they agree (device
    // count, backend, axes) and throws INVALID_ARGUMENT naming the first rank that does not.
    Mesh(const std::string &devices, const std::string &axes, std::shared_ptr<const World> world = nullptr);

    // This process's devices: all of them, unless the mesh spans several processes.
    const std::vector<std::shared_ptr<const runtime::Device>> &devices() const noexcept { return devices_; }
    // Devices over every process, and the name of each ("cpu:0", or "cpu:0@rank1" in a world).
    size_t device_count() const noexcept { return names_.size(); }
    const std::string &device_name(size_t index) const { return names_.at(index); }
    // Null for a mesh in one process.
    const std::shared_ptr<const World> &world() const noexcept { return world_; }
    bool spans_processes() const noexcept { return world_ != nullptr && world_->size() > 1; }
    // As given, in order (the last varies fastest over the device list); empty when none were.
    const std::vector<std::pair<std::string, int32_t>> &axes() const noexcept { return axes_; }
    // The size of axis `name`, or 0 when the mesh does not name it.
    int32_t axis(const std::string &name) const noexcept;

private:
    // Exchanges each rank's device list and axes through the bootstrap and checks they agree.
    void agree_with_world(const std::string &devices, const std::string &axes);
    // Over several machines: throws what the backend says, naming the machines, when its
    // collectives cannot span them.
    void require_network_collectives() const;

    std::vector<std::shared_ptr<const runtime::Device>> devices_;
    std::vector<std::string> names_;
    std::shared_ptr<const World> world_;
    std::vector<std::pair<std::string, int32_t>> axes_;
};

}  // namespace pagoda::mesh
