// plan.h, measured links: the links between a mesh's devices timed through the backend's
// collectives (engine/link_profiler), kept in a cost file for the planners.
#include <vector>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/owned_text.hpp"
#include "capi/sized_struct.hpp"
#include "engine/link_profiler.hpp"
#include "pagoda/plan.h"
#include "plan/measured_costs.hpp"

using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_link_profile_options_t default_link_options() {
    const pagoda::engine::LinkProfileOptions engine_defaults;
    pagoda_link_profile_options_t o{};
    o.struct_size = sizeof(o);
    o.min_bytes = engine_defaults.min_bytes;
    o.max_bytes = engine_defaults.max_bytes;
    o.repeats = engine_defaults.repeats;
    return o;
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_link_profile_options_init(pagoda_link_profile_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_link_options());
}

PAGODA_API pagoda_status_t pagoda_link_profile(const pagoda_mesh_t *mesh, const pagoda_link_profile_options_t *options,
                                               const char *cost_file, char **links_json) {
    return guarded("pagoda_link_profile", [&] {
        const pagoda::mesh::Mesh &m = *pagoda::require_handle(mesh, "mesh")->impl;
        const pagoda_link_profile_options_t o = pagoda::read_sized(options, default_link_options(), "options");
        pagoda::engine::LinkProfileOptions lo;
        lo.min_bytes = o.min_bytes;
        lo.max_bytes = o.max_bytes;
        lo.repeats = o.repeats;
        pagoda::engine::validate(lo);
        const std::vector<pagoda::plan::MeasuredLink> links = pagoda::engine::profile_links(m, lo);
        const bool writes = !m.spans_processes() || m.world()->rank() == 0;
        if (cost_file != nullptr && writes)
            for (const pagoda::plan::MeasuredLink &link : links) pagoda::plan::save_measured_link(cost_file, link);
        if (links_json != nullptr) *links_json = pagoda::owned_text(pagoda::plan::measured_links_json(links));
        return PAGODA_OK;
    });
}

}  // extern "C"
