// The library's log: lines at or above the level named by PAGODA_LOG_LEVEL (debug, info, warn,
// error, off; default warn) go to stderr.
#pragma once

#include <string>

#include "pagoda/backend.h"

namespace pagoda {

void log(pagoda_log_level_t level, const std::string &message) noexcept;

}  // namespace pagoda
