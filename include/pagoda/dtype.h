/**
 * \file dtype.h
 * \brief Element types of tensors, weights and caches.
 */
#ifndef PAGODA_DTYPE_H
#define PAGODA_DTYPE_H

#include "pagoda/common.h"

/**
 * \defgroup dtype Element types
 * \brief The element types that tensors, weights and KV caches use.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief An element type. Values are stable: new types are only appended. */
typedef enum pagoda_dtype {
    PAGODA_DTYPE_INVALID = 0, /**< Not a type; the zero value of a fresh struct. */
    PAGODA_DTYPE_F32 = 1,     /**< IEEE-754 binary32. */
    PAGODA_DTYPE_F16 = 2,     /**< IEEE-754 binary16. */
    PAGODA_DTYPE_BF16 = 3,    /**< bfloat16: the upper half of a binary32. */
    PAGODA_DTYPE_I32 = 4,     /**< Signed 32-bit integer. */
    PAGODA_DTYPE_I64 = 5,     /**< Signed 64-bit integer. */
    PAGODA_DTYPE_I8 = 6,      /**< Signed 8-bit integer. */
    PAGODA_DTYPE_U8 = 7       /**< Unsigned 8-bit integer. */
} pagoda_dtype_t;

/**
 * \brief Bytes per element of a type.
 * \param[in] dtype an element type.
 * \return the size in bytes, or 0 for ::PAGODA_DTYPE_INVALID and unknown values.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API size_t pagoda_dtype_size(pagoda_dtype_t dtype);

/**
 * \brief The lower-case name of a type, such as `"bf16"`.
 * \param[in] dtype an element type.
 * \return a static string; `"invalid"` for unknown values. Never NULL.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_dtype_name(pagoda_dtype_t dtype);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_DTYPE_H */
