// libFuzzer target for pagoda_plan_from_json's reader: any input must either give a plan that
// covers the model's layers and the mesh's devices exactly, writes back to JSON and reads back
// to the same JSON, or fail with pagoda::Error. A crash, a sanitizer report or another
// exception (a stray nlohmann::json type_error, say) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "plan/plan_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        const pagoda::plan::Plan plan = pagoda::plan::plan_from_json(text);
        int64_t next_layer = 0, devices = 0;
        for (const pagoda::plan::Stage &s : plan.partition.stages) {
            if (s.first_layer != next_layer || s.end_layer <= s.first_layer || s.tensor_parallel < 1)
                __builtin_trap();
            next_layer = s.end_layer;
            devices += s.shape.device_count();
        }
        if (next_layer != plan.shape.layers || devices != plan.mesh.device_count()) __builtin_trap();
        const std::string written = pagoda::plan::plan_to_json(plan);
        if (pagoda::plan::plan_to_json(pagoda::plan::plan_from_json(written)) != written) __builtin_trap();
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad plan.
    }
    return 0;
}
