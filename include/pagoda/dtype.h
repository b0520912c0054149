/**
 * \file dtype.h
 * \brief Element types of tensors, weights and caches.
 */
#ifndef PAGODA_DTYPE_H
#define PAGODA_DTYPE_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup dtype Element types
 * \brief The element types that tensors, weights and KV caches use.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief An element type. Values are stable: new types are only appended.
 *
 * The quantized types, appended after the plain ones, are GGUF's block formats with ggml's
 * layouts: a block of values shares its scales, so such a type has no size per element
 * (::pagoda_dtype_size gives 0) and a row of them must hold a whole number of blocks
 * (::pagoda_dtype_block). They appear only as weights: MATMUL's `w_dtype` and EMBEDDING's
 * `table_dtype` (ops.h), where a backend that decodes them says so through `supports()`.
 */
typedef enum pagoda_dtype {
    PAGODA_DTYPE_INVALID = 0, /**< Not a type; the zero value of a fresh struct. */
    PAGODA_DTYPE_F32 = 1,     /**< IEEE-754 binary32. */
    PAGODA_DTYPE_F16 = 2,     /**< IEEE-754 binary16. */
    PAGODA_DTYPE_BF16 = 3,    /**< bfloat16: the upper half of a binary32. */
    PAGODA_DTYPE_I32 = 4,     /**< Signed 32-bit integer. */
    PAGODA_DTYPE_I64 = 5,     /**< Signed 64-bit integer. */
    PAGODA_DTYPE_I8 = 6,      /**< Signed 8-bit integer. */
    PAGODA_DTYPE_U8 = 7,      /**< Unsigned 8-bit integer. */
    PAGODA_DTYPE_Q8_0 = 8,    /**< GGUF Q8_0: blocks of 32 int8 values and an f16 scale. */
    PAGODA_DTYPE_Q4_0 = 9,    /**< GGUF Q4_0: blocks of 32 4-bit values and an f16 scale. */
    PAGODA_DTYPE_Q4_K = 10,   /**< GGUF Q4_K: blocks of 256 4-bit values, 8 scales and mins. */
    PAGODA_DTYPE_Q5_K = 11,   /**< GGUF Q5_K: blocks of 256 5-bit values, 8 scales and mins. */
    PAGODA_DTYPE_Q6_K = 12    /**< GGUF Q6_K: blocks of 256 6-bit values, 16 int8 scales. */
} pagoda_dtype_t;

/**
 * \brief Bytes per element of a type.
 * \param[in] dtype an element type.
 * \return the size in bytes, or 0 for ::PAGODA_DTYPE_INVALID, the quantized block types (see
 *         ::pagoda_dtype_block) and unknown values.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API size_t pagoda_dtype_size(pagoda_dtype_t dtype);

/**
 * \brief The block a type stores values in: 1 value of ::pagoda_dtype_size bytes for the plain
 * types, 32 or 256 values sharing their scales for the quantized ones.
 * \param[in] dtype an element type.
 * \param[out] elements values per block; may be NULL.
 * \param[out] bytes bytes per block; may be NULL.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for ::PAGODA_DTYPE_INVALID and unknown
 *         values (the outputs are then set to 0).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_dtype_block(pagoda_dtype_t dtype, int64_t *elements,
                                              size_t *bytes);

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
