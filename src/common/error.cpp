#include "common/error.hpp"

namespace pagoda {

namespace {
thread_local std::string t_last_error;
}

void set_last_error(const std::string &message) noexcept {
    try {
        t_last_error = message;
    } catch (...) {
        // Out of memory while recording an error: keep the old text rather than fail again.
    }
}

const char *last_error() noexcept { return t_last_error.c_str(); }

void clear_last_error() noexcept { t_last_error.clear(); }

}  // namespace pagoda
