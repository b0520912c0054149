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

const char *status_name(int status) noexcept {
    switch (status) {
        case PAGODA_OK: return "PAGODA_OK";
        case PAGODA_ERR_INVALID_ARGUMENT: return "PAGODA_ERR_INVALID_ARGUMENT";
        case PAGODA_ERR_OUT_OF_MEMORY: return "PAGODA_ERR_OUT_OF_MEMORY";
        case PAGODA_ERR_NOT_FOUND: return "PAGODA_ERR_NOT_FOUND";
        case PAGODA_ERR_IO: return "PAGODA_ERR_IO";
        case PAGODA_ERR_FORMAT: return "PAGODA_ERR_FORMAT";
        case PAGODA_ERR_UNSUPPORTED: return "PAGODA_ERR_UNSUPPORTED";
        case PAGODA_ERR_ABI_MISMATCH: return "PAGODA_ERR_ABI_MISMATCH";
        case PAGODA_ERR_NOT_A_PLUGIN: return "PAGODA_ERR_NOT_A_PLUGIN";
        case PAGODA_ERR_BACKEND: return "PAGODA_ERR_BACKEND";
        case PAGODA_ERR_INVALID_HANDLE: return "PAGODA_ERR_INVALID_HANDLE";
        case PAGODA_ERR_ALREADY_EXISTS: return "PAGODA_ERR_ALREADY_EXISTS";
        case PAGODA_ERR_CANCELLED: return "PAGODA_ERR_CANCELLED";
        case PAGODA_ERR_EMPTY: return "PAGODA_ERR_EMPTY";
        case PAGODA_ERR_INTERNAL: return "PAGODA_ERR_INTERNAL";
    }
    return "PAGODA_ERR_UNKNOWN";
}

}  // namespace pagoda
