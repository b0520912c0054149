// kernel_choice.h: reading an engine's kernel choice table.
#include <cstdio>
#include <iterator>
#include <string>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "engine/engine.hpp"
#include "pagoda/kernel_choice.h"

using pagoda::fail;
using pagoda::guarded;

extern "C" {

PAGODA_API pagoda_status_t pagoda_engine_kernel_choice_count(const pagoda_engine_t *engine,
                                                             size_t *count) {
    return guarded("pagoda_engine_kernel_choice_count", [&] {
        if (count == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "count is NULL");
        *count = 0;
        *count = pagoda::require_handle(engine, "engine")->impl->kernel_choices().entries().size();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_kernel_choice(const pagoda_engine_t *engine, size_t index,
                                                       pagoda_kernel_choice_info_t *info) {
    return guarded("pagoda_engine_kernel_choice", [&] {
        const auto &entries = pagoda::require_handle(engine, "engine")->impl->kernel_choices().entries();
        if (index >= entries.size())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "kernel choice index " + std::to_string(index) +
                                                  " is out of range (the engine has " +
                                                  std::to_string(entries.size()) + ")");
        const auto &[shape, choice] = *std::next(entries.begin(), std::ptrdiff_t(index));
        pagoda_kernel_choice_info_t full{};
        full.struct_size = sizeof full;
        full.w_dtype = shape.w_dtype;
        full.x_dtype = shape.x_dtype;
        full.y_dtype = shape.y_dtype;
        full.flags = shape.flags;
        full.n = shape.n;
        full.k = shape.k;
        full.m = shape.m_bucket;
        full.seconds = choice.seconds;
        full.rules_seconds = choice.rules_seconds;
        std::snprintf(full.device, sizeof full.device, "%s", shape.device.c_str());
        std::snprintf(full.variant, sizeof full.variant, "%s", choice.variant.c_str());
        pagoda::write_sized(info, full, "info");
        return PAGODA_OK;
    });
}

}  // extern "C"
