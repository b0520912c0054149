// pagoda_status_string, the thread-local error message and pagoda_free.
#include <cstdlib>

#include "capi/enum_arg.hpp"
#include "common/error.hpp"
#include "pagoda/status.h"

extern "C" {

PAGODA_API const char *pagoda_status_string(pagoda_status_t status) {
    return pagoda::status_name(pagoda::enum_arg(status));
}

PAGODA_API const char *pagoda_last_error_message(void) { return pagoda::last_error(); }

PAGODA_API void pagoda_clear_error(void) { pagoda::clear_last_error(); }

PAGODA_API void pagoda_free(void *ptr) { std::free(ptr); }

}  // extern "C"
