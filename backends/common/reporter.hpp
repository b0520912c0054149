// Where a backend's checks send their failures. The CPU and CUDA backends both derive from it,
// so the descriptor checks they share (op_checks.hpp) report through whichever backend runs them.
#pragma once

#include <string>

#include "pagoda/status.h"

namespace pagoda::plugin {

class Reporter {
public:
    // Records `message` as the calling thread's error (through the host) and returns `status`,
    // so checks write `return r.fail(PAGODA_ERR_INVALID_ARGUMENT, "...")`.
    virtual pagoda_status_t fail(pagoda_status_t status, const std::string &message) const = 0;

protected:
    ~Reporter() = default;
};

}  // namespace pagoda::plugin
