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

std::shared_ptr<const pagoda::runtime::Device> one_device(const char *name, const char *field) {
    const std::string text = name;
    if (text.empty() || text.find_first_of(",-") != std::string::npos)
        fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(field) + " is \"" + text + "\": want one device, such as cpu:0");
    return pagoda::mesh::Mesh(text, "").devices().front();
}

// "cpu:0 AMD EPYC 7B13, 1 thread beside cpu:1": what the numbers were measured on, the entry's key.
std::string describe(const pagoda::runtime::Device &device, const char *beside) {
    const pagoda_device_info_t &info = device.info();
    std::string text = device.name() + " " + info.name;
    if (info.kind == PAGODA_DEVICE_CPU)
        text += ", " + std::to_string(info.compute_units) + (info.compute_units == 1 ? " thread" : " threads");
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

        const auto timed = one_device(device, "device");
        if (o.beside != nullptr) {
            po.neighbour = one_device(o.beside, "options->beside");
            if (po.neighbour->name() == timed->name())
                fail(PAGODA_ERR_INVALID_ARGUMENT, "options->beside is the timed device itself (" + timed->name() + ")");
        }
        const bool cpu = timed->info().kind == PAGODA_DEVICE_CPU;
        // Links and memory are not measured here: the preset of the device's kind supplies them.
        pagoda::plan::DeviceSpec spec = pagoda::plan::device_preset(cpu ? "cpu" : "h100");
        if (timed->info().total_memory > 0) spec.memory_bytes = double(timed->info().total_memory);

        const auto model = pagoda::model::open_model(model_path, {}, nullptr);
        const std::string backend = timed->name().substr(0, timed->name().find(':'));
        const pagoda::plan::MeasuredLayerCosts costs =
            pagoda::engine::profile_layer_costs(model, timed, backend, describe(*timed, o.beside), spec, po);
        pagoda::plan::save_measured_costs(cost_file, costs);
        if (entry_json != nullptr) *entry_json = pagoda::owned_text(pagoda::plan::measured_costs_json(costs));
        return PAGODA_OK;
    });
}

}  // extern "C"
