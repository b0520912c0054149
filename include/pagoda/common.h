/**
 * \file common.h
 * \brief Export macro, the library's deallocator and other items every header needs.
 */
#ifndef PAGODA_COMMON_H
#define PAGODA_COMMON_H

#include <stddef.h>
#include <stdint.h>

/**
 * \defgroup common Common definitions
 * \brief The export macro and ownership rules shared by every header.
 * @{
 */

/** \brief Marks a function exported by libpagoda. Hosts need not define anything. */
#if defined(PAGODA_BUILDING_LIBRARY)
#define PAGODA_API __attribute__((visibility("default")))
#else
#define PAGODA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief Releases memory that a pagoda function returned for the caller to own.
 *
 * Use it for strings such as the JSON of a plan; handles have their own `_destroy`.
 * \param[in] ptr memory returned by libpagoda with ownership, or NULL (then nothing happens).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API void pagoda_free(void *ptr);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_COMMON_H */
