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
 *
 * Rules a binding can rely on, in every header a host uses:
 * - Every handle (`pagoda_X_t`) is released with its `pagoda_X_destroy`, which accepts NULL and
 *   may be called in any order with the others: what a handle was made from (a model for an
 *   engine, a cache for an engine) is kept alive by it, not by the host. The one exception is
 *   the HTTP server, which borrows the engines it serves (server.h).
 * - Every struct field holding an enum's value is an `int32_t` (the comment names the enum), so
 *   its size never depends on the compiler; enums are passed as function arguments by value.
 * - Every function states its thread safety; a function that can fail returns a
 *   ::pagoda_status_t (older ones that cannot have a `_v2` that can).
 * @{
 */

/** \brief Marks a function exported by libpagoda. Hosts need not define anything. */
#if defined(PAGODA_BUILDING_LIBRARY)
#define PAGODA_API __attribute__((visibility("default")))
#else
#define PAGODA_API
#endif

/** \brief A model opened from a GGUF file or a Hugging Face folder (model.h). */
typedef struct pagoda_model pagoda_model_t;
/** \brief Text to token ids and back (tokenizer.h). */
typedef struct pagoda_tokenizer pagoda_tokenizer_t;
/** \brief Devices arranged on named axes (mesh.h). */
typedef struct pagoda_mesh pagoda_mesh_t;
/** \brief Where each layer runs and how prefill is sliced; made by the planner. */
typedef struct pagoda_plan pagoda_plan_t;
/** \brief A paged KV block pool on the mesh's devices (kv_cache.h). */
typedef struct pagoda_kv_cache pagoda_kv_cache_t;
/** \brief The serving loop over a model, a mesh and a KV cache (engine.h). */
typedef struct pagoda_engine pagoda_engine_t;

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
