/**
 * \file status.h
 * \brief Status codes and the thread-local error message.
 */
#ifndef PAGODA_STATUS_H
#define PAGODA_STATUS_H

#include "pagoda/common.h"

/**
 * \defgroup status Status codes and errors
 * \brief Every fallible call returns a ::pagoda_status_t; on failure
 *        pagoda_last_error_message() says what went wrong and where.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief Result of a fallible call. Values are stable: new codes are only appended.
 */
typedef enum pagoda_status {
    PAGODA_OK = 0,                     /**< Success. */
    PAGODA_ERR_INVALID_ARGUMENT = 1,   /**< An argument or option is out of range or NULL. */
    PAGODA_ERR_OUT_OF_MEMORY = 2,      /**< Host or device memory could not be allocated. */
    PAGODA_ERR_NOT_FOUND = 3,          /**< A file, symbol, name or id does not exist. */
    PAGODA_ERR_IO = 4,                 /**< Reading or writing a file failed. */
    PAGODA_ERR_FORMAT = 5,             /**< A file or message is malformed. */
    PAGODA_ERR_UNSUPPORTED = 6,        /**< Valid, but not supported by this build or backend. */
    PAGODA_ERR_ABI_MISMATCH = 7,       /**< A plugin speaks another ABI version. */
    PAGODA_ERR_NOT_A_PLUGIN = 8,       /**< A shared object is not a Pagoda backend. */
    PAGODA_ERR_BACKEND = 9,            /**< A backend reported a failure (driver, kernel, collective). */
    PAGODA_ERR_INVALID_HANDLE = 10,    /**< A handle is NULL, destroyed or of the wrong kind. */
    PAGODA_ERR_ALREADY_EXISTS = 11,    /**< Something with that name is already registered. */
    PAGODA_ERR_CANCELLED = 12,         /**< The operation was cancelled by the caller. */
    PAGODA_ERR_EMPTY = 13,             /**< Nothing to return now (for example, no output to poll). */
    PAGODA_ERR_INTERNAL = 14           /**< A bug in Pagoda; the message says where. */
} pagoda_status_t;

/**
 * \brief The name of a status code, such as `"PAGODA_ERR_FORMAT"`.
 * \param[in] status any value; unknown values give `"PAGODA_ERR_UNKNOWN"`.
 * \return a static string; never NULL.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_status_string(pagoda_status_t status);

/**
 * \brief A sentence about the last failure on the calling thread.
 *
 * Set by every call that returns a status other than ::PAGODA_OK; it names the file, field or
 * value at fault. Successful calls leave it as it was.
 * \return a thread-local string, valid until the next pagoda call on this thread; `""` when no
 *         call on this thread has failed. Never NULL.
 * \par Thread safety
 * Each thread has its own message.
 * \since 0.1
 */
PAGODA_API const char *pagoda_last_error_message(void);

/**
 * \brief Clears the calling thread's error message.
 * \par Thread safety
 * Affects only the calling thread.
 * \since 0.1
 */
PAGODA_API void pagoda_clear_error(void);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_STATUS_H */
