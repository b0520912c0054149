// log.h: the host's log callback and the level.
#include <string>

#include "capi/enum_arg.hpp"
#include "capi/guard.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "pagoda/log.h"

extern "C" {

PAGODA_API void pagoda_log_set_callback(pagoda_log_callback_t callback, void *user_data) {
    pagoda::set_log_callback(callback, user_data);
}

PAGODA_API pagoda_status_t pagoda_log_set_level(pagoda_log_level_t level) {
    return pagoda::guarded("pagoda_log_set_level", [&] {
        const int v = pagoda::enum_arg(level);
        if (v < int(PAGODA_LOG_DEBUG) || v > int(PAGODA_LOG_OFF))
            pagoda::fail(PAGODA_ERR_INVALID_ARGUMENT,
                         "log level " + std::to_string(v) + " is not a pagoda_log_level_t (0..4)");
        pagoda::set_log_level(level);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_log_level_t pagoda_log_get_level(void) { return pagoda::log_level(); }

}  // extern "C"
