/**
 * \file version.h
 * \brief The version of the headers and of the library.
 */
#ifndef PAGODA_VERSION_H
#define PAGODA_VERSION_H

#include "pagoda/common.h"

/**
 * \defgroup version Version
 * \brief Compare the headers a host was built with against the library it runs with.
 * @{
 */

/** \brief Major version; a change means an ABI break (and a new SONAME). */
#define PAGODA_VERSION_MAJOR 0
/** \brief Minor version; grows when functions or fields are appended. */
#define PAGODA_VERSION_MINOR 1
/** \brief Patch version; fixes only. */
#define PAGODA_VERSION_PATCH 0
/** \brief The version as one comparable number: major·10000 + minor·100 + patch. */
#define PAGODA_VERSION_NUMBER \
    (PAGODA_VERSION_MAJOR * 10000 + PAGODA_VERSION_MINOR * 100 + PAGODA_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief The library's version as a string, such as `"0.1.0"`.
 * \return a static string; never NULL.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_version(void);

/**
 * \brief The library's version as ::PAGODA_VERSION_NUMBER computes it.
 *
 * A host checks `pagoda_version_number() / 10000 == PAGODA_VERSION_MAJOR` at start.
 * \return the version number of the running library.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API int32_t pagoda_version_number(void);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_VERSION_H */
