// pagoda_version and pagoda_version_number.
#include "pagoda/version.h"

#define PAGODA_STR2(x) #x
#define PAGODA_STR(x) PAGODA_STR2(x)

extern "C" {

PAGODA_API const char *pagoda_version(void) {
    return PAGODA_STR(PAGODA_VERSION_MAJOR) "." PAGODA_STR(PAGODA_VERSION_MINOR) "." PAGODA_STR(
        PAGODA_VERSION_PATCH);
}

PAGODA_API int32_t pagoda_version_number(void) { return PAGODA_VERSION_NUMBER; }

}  // extern "C"
