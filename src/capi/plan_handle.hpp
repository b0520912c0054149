// The struct behind plan.h's opaque handle, with the magic word every entry point checks.
#pragma once

#include <cstdint>

#include "plan/plan.hpp"

struct pagoda_plan {
    static constexpr uint32_t kMagic = 0x4e414c50u;  // "PLAN"
    uint32_t magic = kMagic;
    pagoda::plan::Plan impl;
    ~pagoda_plan() { magic = 0; }
};
