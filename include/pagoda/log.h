/**
 * \file log.h
 * \brief Where libpagoda's log lines go and which of them are written.
 */
#ifndef PAGODA_LOG_H
#define PAGODA_LOG_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup log Logging
 * \brief The library speaks through the host's log: a callback the host sets, or standard error
 *        by default, at warnings and errors only unless the host asks for more.
 *
 * The starting level comes from the environment variable `PAGODA_LOG_LEVEL` (`debug`, `info`,
 * `warn`, `error` or `off`; unset or unknown: `warn`). Backends log through the same sink.
 * @{
 */

/** \brief Severity of a log line. */
typedef enum pagoda_log_level {
    PAGODA_LOG_DEBUG = 0, /**< Detail for developers. */
    PAGODA_LOG_INFO = 1,  /**< Progress a user may want, such as a backend that found no device. */
    PAGODA_LOG_WARN = 2,  /**< Something was skipped or degraded. */
    PAGODA_LOG_ERROR = 3, /**< An operation failed. */
    PAGODA_LOG_OFF = 4    /**< Only as a threshold for pagoda_log_set_level(): no line passes. */
} pagoda_log_level_t;

/**
 * \brief Receives one log line.
 * \param[in] user_data what was given to pagoda_log_set_callback().
 * \param[in] level the line's severity (never ::PAGODA_LOG_OFF).
 * \param[in] message the line, UTF-8, without a trailing newline; valid during the call only.
 *
 * Called on whichever thread logs, one line at a time (calls never overlap). It must not call
 * pagoda_log_set_callback(); other pagoda functions may be called, but lines they log then are
 * dropped rather than delivered re-entrantly.
 */
typedef void (*pagoda_log_callback_t)(void *user_data, pagoda_log_level_t level, const char *message);

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief Sends the library's log lines to `callback` instead of standard error.
 * \param[in] callback the host's sink, or NULL to go back to standard error (`pagoda <level>:
 *            <message>` lines).
 * \param[in] user_data passed back to every call of `callback`.
 *
 * Lines below the level set by pagoda_log_set_level() never reach the sink. When this returns,
 * no call of the previous callback is running or will start.
 * \par Thread safety
 * Safe from any thread, but not from inside a log callback.
 * \since 0.1
 */
PAGODA_API void pagoda_log_set_callback(pagoda_log_callback_t callback, void *user_data);

/**
 * \brief Sets the least severe level that is logged.
 * \param[in] level ::PAGODA_LOG_DEBUG to ::PAGODA_LOG_ERROR, or ::PAGODA_LOG_OFF for silence.
 * \return ::PAGODA_OK, or ::PAGODA_ERR_INVALID_ARGUMENT for a value outside the enum.
 * \par Thread safety
 * Safe from any thread; lines being written as it changes are written or dropped whole.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_log_set_level(pagoda_log_level_t level);

/**
 * \brief The least severe level that is logged now.
 * \return the level set by pagoda_log_set_level(), or the one `PAGODA_LOG_LEVEL` gave.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_log_level_t pagoda_log_get_level(void);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_LOG_H */
