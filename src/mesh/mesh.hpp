// A mesh: devices named `<backend>:<index>`, listed with commas and ranges ("cuda:0-3,cuda:6"),
// and named axes over them ("pp=2,tp=4") whose sizes multiply to the device count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
    // loaded. Throws NOT_FOUND naming a backend that is not loaded or a device it lacks.
    Mesh(const std::string &devices, const std::string &axes);

    const std::vector<std::shared_ptr<const runtime::Device>> &devices() const noexcept { return devices_; }
    // As given, in order (the last varies fastest over the device list); empty when none were.
    const std::vector<std::pair<std::string, int32_t>> &axes() const noexcept { return axes_; }
    // The size of axis `name`, or 0 when the mesh does not name it.
    int32_t axis(const std::string &name) const noexcept;

private:
    std::vector<std::shared_ptr<const runtime::Device>> devices_;
    std::vector<std::pair<std::string, int32_t>> axes_;
};

}  // namespace pagoda::mesh
