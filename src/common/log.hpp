// The library's log: lines at or above the current level (pagoda_log_set_level(), starting from
// PAGODA_LOG_LEVEL: debug, info, warn, error, off; default warn) go to the host's callback
// (pagoda_log_set_callback()) or, without one, to stderr.
#pragma once

#include <string>

#include "pagoda/log.h"

namespace pagoda {

void log(pagoda_log_level_t level, const std::string &message) noexcept;

// Whether a line at `level` would be written (to skip building costly messages).
bool log_enabled(pagoda_log_level_t level) noexcept;

void set_log_level(pagoda_log_level_t level) noexcept;
pagoda_log_level_t log_level() noexcept;
void set_log_callback(pagoda_log_callback_t callback, void *user_data) noexcept;

}  // namespace pagoda
