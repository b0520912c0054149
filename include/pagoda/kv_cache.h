/**
 * \file kv_cache.h
 * \brief The paged KV cache: a pool of fixed-size blocks on a device, lent to sequences.
 */
#ifndef PAGODA_KV_CACHE_H
#define PAGODA_KV_CACHE_H

#include "pagoda/common.h"
#include "pagoda/dtype.h"
#include "pagoda/status.h"

/**
 * \defgroup kv_cache KV cache
 * \brief Keys and values of every layer live in blocks of `block_size` tokens (PagedAttention).
 *        A sequence holds a table of block ids and grows one block at a time, so memory follows
 *        the tokens actually held rather than a reservation for the longest possible answer.
 *
 * The engine allocates and frees blocks; the host sizes the pool and reads statistics.
 * pagoda_kv_cache_get_stats() is safe from any thread.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief How to size a KV cache. Initialise with pagoda_kv_cache_options_default(). */
typedef struct pagoda_kv_cache_options {
    uint32_t struct_size;    /**< sizeof(pagoda_kv_cache_options_t) as the caller knows it. */
    int32_t block_size;      /**< Tokens per block on each device, 1–128; 0 = 16. Under cache
                                  parallelism (a mesh's `kvp` axis) a block holds `kvp` such runs,
                                  one per device, and the statistics count that many tokens. */
    int32_t dtype;           /**< A ::pagoda_dtype_t: F32, F16 or BF16; ::PAGODA_DTYPE_INVALID (0) =
                                  F32 on CPU, F16 on GPU. */
    int64_t num_blocks;      /**< Blocks in the pool; 0 = as many as `memory_bytes` allows. */
    uint64_t memory_bytes;   /**< Budget when `num_blocks` is 0; 0 = a quarter of the device's free
                                  memory, at most enough for 64 full-length sequences. */
    uint64_t swap_bytes;     /**< Host memory for blocks swapped out of the device (preemption by
                                  swap); 0 = as much as the device pool, at most 4 GiB. */
    int32_t prefix_caching;  /**< 1 = keep full blocks of finished prompts and reuse them for
                                  requests that share the prefix (default); 0 = off. */
} pagoda_kv_cache_options_t;

/** \brief A KV cache's state; filled by pagoda_kv_cache_get_stats(). */
typedef struct pagoda_kv_cache_stats {
    uint32_t struct_size;     /**< Set by the caller to sizeof(pagoda_kv_cache_stats_t). */
    int32_t block_size;       /**< Tokens per block. */
    int64_t blocks_total;     /**< Blocks in the pool. */
    int64_t blocks_used;      /**< Blocks held by at least one sequence. */
    int64_t blocks_free;      /**< Blocks holding nothing: `blocks_total - blocks_used - blocks_cached`. */
    int64_t slots_used;       /**< Token slots holding keys and values (≤ `blocks_used · block_size`). */
    int64_t sequences;        /**< Sequences holding blocks. */
    uint64_t bytes_per_block; /**< Device bytes one block takes across all layers (K and V). */
    int64_t blocks_cached;    /**< Blocks no sequence holds that keep a cached prefix (evicted LRU when needed). */
    int64_t slots_wasted;     /**< Internal waste: slots of used blocks that hold no token. */
    int64_t swap_blocks_total;/**< Blocks of host swap space. */
    int64_t swap_blocks_used; /**< Host blocks holding swapped-out sequences. */
    int64_t prefix_queries;   /**< Full prompt blocks looked up in the prefix cache so far. */
    int64_t prefix_hits;      /**< Of those, found (and verified against their tokens). */
} pagoda_kv_cache_stats_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults.
 *
 * Call it as pagoda_kv_cache_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_kv_cache_options_init(pagoda_kv_cache_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_kv_cache_options_init() with the caller's struct size. */
#define pagoda_kv_cache_options_default(options) pagoda_kv_cache_options_init((options), sizeof *(options))

/**
 * \brief Allocates a KV cache for `model` on `mesh`'s devices, laid out as `plan` says.
 *
 * Every device holds every block id, in pools of the layers it runs and the KV heads it holds
 * (all of a pipeline stage's layers; its share of the heads under tensor parallelism, a copy
 * of a head shared by several devices when they outnumber the heads), so one block table
 * serves them all. The block count is what every device's budget holds.
 * \param[in] model the model whose layers it holds (head counts and sizes).
 * \param[in] mesh the devices.
 * \param[in] plan the layout (plan.h), checked against the model and the mesh; NULL: the whole
 *            model on a one-device mesh, the planner's layout on a larger one (its `pp` and
 *            `tp` axes, when named, fix the stage count and width).
 * \param[in] options NULL for the defaults; `memory_bytes` is a budget per device.
 * \param[out] out the cache; release with pagoda_kv_cache_destroy() (before or after the engine
 *             using it: the engine keeps it alive).
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for a block size or dtype out of range, a
 *         budget smaller than one block, or a plan that does not fit the model or the mesh (the
 *         message names the mismatch); ::PAGODA_ERR_OUT_OF_MEMORY when a device cannot hold its
 *         pools; ::PAGODA_ERR_UNSUPPORTED for a layout not executed yet (dp, stages on several
 *         backends) or a dtype the backend's attention cannot read.
 * \par Thread safety
 * Safe from any thread; the model, mesh and plan are only read.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_kv_cache_create(const pagoda_model_t *model,
                                                  const pagoda_mesh_t *mesh,
                                                  const pagoda_plan_t *plan,
                                                  const pagoda_kv_cache_options_t *options,
                                                  pagoda_kv_cache_t **out);

/**
 * \brief Releases a KV cache's handle. An engine using the cache keeps it alive until the engine
 *        is destroyed; the blocks and pools go with the last of the two.
 * \param[in] cache the handle, or NULL.
 * \par Thread safety
 * Not while another call on this handle runs.
 * \since 0.1
 */
PAGODA_API void pagoda_kv_cache_destroy(pagoda_kv_cache_t *cache);

/**
 * \brief Reads the cache's statistics.
 * \param[in] cache the handle.
 * \param[in,out] stats `struct_size` set by the caller; the rest is filled.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or dead `cache`;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `stats` or an unset `struct_size`.
 * \par Thread safety
 * Safe from any thread, also while an engine steps.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_kv_cache_get_stats(const pagoda_kv_cache_t *cache,
                                                 pagoda_kv_cache_stats_t *stats);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_KV_CACHE_H */
