// A plan as JSON and back; the schema is documented in include/pagoda/plan.h.
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace pagoda::plan {

std::string plan_to_json(const Plan &plan);

// Throws Error(FORMAT) naming the field (as a JSON path such as "stages[2].end_layer") for text
// that is not a plan of this version, or whose stages do not cover the layers and the mesh.
Plan plan_from_json(std::string_view text);

}  // namespace pagoda::plan
