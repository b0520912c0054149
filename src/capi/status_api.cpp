// pagoda_status_string, the thread-local error message and pagoda_free.
#include <cstdlib>

#include "capi/enum_arg.hpp"
#include "common/error.hpp"
#include "pagoda/status.h"

extern "C" {

PAGODA_API const char *pagoda_status_string(pagoda_status_t status) {
    switch (pagoda::enum_arg(status)) {
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

PAGODA_API const char *pagoda_last_error_message(void) { return pagoda::last_error(); }

PAGODA_API void pagoda_clear_error(void) { pagoda::clear_last_error(); }

PAGODA_API void pagoda_free(void *ptr) { std::free(ptr); }

}  // extern "C"
