// plan.h, cost files: a model's decoder layers timed on a real device (engine/layer_profiler),
// kept for the planners.
#include <memory>
#include <string>

#include "capi/guard.hpp"
#include "capi/owned_text.hpp"
#include "capi/sized_struct.hpp"
#include "engine/layer_profiler.hpp"
#include "mesh/mesh.hpp"
#include "model/model.hpp"
#include "pagoda/plan.h"
#include "plan/device_spec.hpp"
#include "plan/measured_costs.hpp"

using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_cost_profile_options_t default_profile_options() {
    pagoda_cost_profile_options_t o{};
    o.struct_size = sizeof(o);
    o.max_tokens = 128;
    o.granularity = 8;
    o.grid = 4;
    o.repeats = 3;
    o.beside = nullptr;
    return o;
}

// The devices a list names ("cpu:0", "cpu:0-1"): one device, or a tensor-parallel group.
pagoda::engine::DeviceGroup device_group(const char *list, const char *field) {
    const std::string text = list;
    if (text.empty()) fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(field) + " is empty: want a device such as cpu:0");
    return pagoda::mesh::Mesh(text, "").devices();
}

// "cpu:0-1 AMD EPYC 7B13, 1 thread each, tp=2 beside cpu:2": what the numbers were measured on,
// the entry's key.
std::string describe(const char *list, const pagoda::engine::DeviceGroup &devices, const char *beside) {
    const pagoda_device_info_t &info = devices.front()->info();
    std::string text = std::string(list) + " " + info.name;
    if (info.kind == PAGODA_DEVICE_CPU)
        text += ", " + std::to_string(info.compute_units) + (info.compute_units == 1 ? " thread" : " threads") +
                (devices.size() > 1 ? " each" : "");
    if (devices.size() > 1) text += ", tp=" + std::to_string(devices.size());
    if (beside != nullptr) text += std::string(" beside ") + beside;
    return text;
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_cost_profile_options_init(pagoda_cost_profile_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_profile_options());
}

PAGODA_API pagoda_status_t pagoda_cost_profile(const char *model_path, const char *device,
                                               const pagoda_cost_profile_options_t *options,
                                               const char *cost_file, char **entry_json) {
    return guarded("pagoda_cost_profile", [&] {
        if (model_path == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "model_path is NULL");
        if (device == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "device is NULL");
        if (cost_file == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "cost_file is NULL");
        const pagoda_cost_profile_options_t o = pagoda::read_sized(options, default_profile_options(), "options");
        pagoda::engine::ProfileOptions po;
        po.max_tokens = o.max_tokens;
        po.granularity = o.granularity;
        po.grid = o.grid;
        po.repeats = o.repeats;
        pagoda::engine::validate(po);

        const pagoda::engine::DeviceGroup timed = device_group(device, "device");
        if (o.beside != nullptr) {
            po.neighbour = device_group(o.beside, "options->beside");
            for (const auto &busy : po.neighbour)
                for (const auto &d : timed)
                    if (busy->name() == d->name())
                        fail(PAGODA_ERR_INVALID_ARGUMENT, "options->beside names " + d->name() + ", a timed device");
        }
        const pagoda_device_info_t &info = timed.front()->info();
        // Links and memory are not measured here: the preset of the device's kind supplies them.
        pagoda::plan::DeviceSpec spec = pagoda::plan::device_preset(info.kind == PAGODA_DEVICE_CPU ? "cpu" : "h100");
        if (info.total_memory > 0) spec.memory_bytes = double(info.total_memory);

        const auto model = pagoda::model::open_model(model_path, {}, nullptr);
        const std::string &first = timed.front()->name();
        const pagoda::plan::MeasuredLayerCosts costs = pagoda::engine::profile_layer_costs(
            model, timed, first.substr(0, first.find(':')), describe(device, timed, o.beside), spec, po);
        pagoda::plan::save_measured_costs(cost_file, costs);
        if (entry_json != nullptr) *entry_json = pagoda::owned_text(pagoda::plan::measured_costs_json(costs));
        return PAGODA_OK;
    });
}

}  // extern "C"
