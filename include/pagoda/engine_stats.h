/**
 * \file engine_stats.h
 * \brief What an engine reports: its counters, per-device placement and serving metrics.
 */
#ifndef PAGODA_ENGINE_STATS_H
#define PAGODA_ENGINE_STATS_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \addtogroup engine
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief The engine's counters; filled by pagoda_engine_get_stats(). */
typedef struct pagoda_engine_stats {
    uint32_t struct_size;          /**< Set by the caller to sizeof(pagoda_engine_stats_t). */
    int64_t requests_waiting;      /**< Submitted, not yet running (preempted by recompute included). */
    int64_t requests_running;      /**< Holding KV blocks on the device. */
    int64_t requests_swapped;      /**< Preempted by swap, waiting to come back. */
    int64_t requests_finished;     /**< Ended, for any reason, since the engine was made. */
    int64_t preemptions_recompute; /**< Preemptions by recompute so far. */
    int64_t preemptions_swap;      /**< Preemptions by swap so far. */
    int64_t steps;                 /**< Steps that ran the model. */
    int64_t prompt_tokens;         /**< Prompt tokens computed (recomputed ones and prefix-cache hits excluded). */
    int64_t generated_tokens;      /**< Tokens sampled. */
    int64_t batched_sequences;     /**< Sum over steps of the sequences in the batch (mean batch = this / steps). */
    int64_t graph_steps;           /**< Steps launched as one recorded decode graph (::pagoda_decode_graphs_t). */
    int64_t device_sampled_tokens; /**< Tokens picked on the device (::pagoda_device_sampling_t). */
} pagoda_engine_stats_t;

/** \brief What one device of an engine's mesh holds and runs; filled by pagoda_engine_get_device_stats(). */
typedef struct pagoda_device_stats {
    uint32_t struct_size;   /**< Set by the caller to sizeof(pagoda_device_stats_t). */
    char device[32];        /**< The device's name, NUL-terminated ("cpu:1"). */
    int32_t stage;          /**< The pipeline stage it belongs to (0 = the first). */
    int32_t tp_rank;        /**< Its rank in the stage's tensor-parallel group. */
    int32_t tp_size;        /**< The stage's tensor-parallel degree. */
    int64_t first_layer;    /**< The first decoder layer it runs. */
    int64_t end_layer;      /**< One past the last decoder layer it runs. */
    int64_t kv_heads;       /**< KV heads its part of the KV cache holds. */
    uint64_t weight_bytes;  /**< Bytes of the model's weights it holds (its shard). */
    uint64_t kv_bytes;      /**< Bytes of its KV-cache pools. */
    uint64_t layer_weight_bytes; /**< Of `weight_bytes`, those of its decoder layers (without the
                                      embedding, final norm and LM head). */
    int32_t kvp_rank;       /**< Its share of the KV cache under cache parallelism (0 without). */
    int32_t kvp_size;       /**< Devices the KV cache's blocks are split over (1 without). */
    /* Appended in 0.9: mixtures of experts. */
    int32_t ep_rank;        /**< Its group among the stage's expert-parallel groups (0 without). */
    int32_t ep_size;        /**< Groups the stage's experts split into (the mesh's `ep`; 1 without). */
    uint64_t expert_weight_bytes; /**< Of `layer_weight_bytes`, those of the experts it holds (0 for a dense model). */
} pagoda_device_stats_t;

/**
 * \brief Number of devices the engine runs on (1 unless its mesh has several).
 * \param[in] engine the engine.
 * \return the count; 0 for an invalid handle.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API size_t pagoda_engine_device_count(const pagoda_engine_t *engine);

/**
 * \brief Number of devices the engine runs on, or why it cannot be told.
 * \param[in] engine the engine.
 * \param[out] count the count; 0 on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed engine;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `count`.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_device_count_v2(const pagoda_engine_t *engine, size_t *count);

/**
 * \brief What the engine's `index`-th device (in mesh order) holds: its stage, its layers, its
 *        share of the weights and of the KV cache.
 * \param[in] engine the engine.
 * \param[in] index 0 ≤ index < pagoda_engine_device_count().
 * \param[in,out] stats `struct_size` set by the caller; the rest is filled.
 * \return ::PAGODA_OK, ::PAGODA_ERR_INVALID_HANDLE or ::PAGODA_ERR_INVALID_ARGUMENT (an index
 *         out of range).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_get_device_stats(const pagoda_engine_t *engine, size_t index,
                                                          pagoda_device_stats_t *stats);

/**
 * \brief Reads the engine's counters.
 * \param[in] engine the engine.
 * \param[in,out] stats `struct_size` set by the caller; the rest is filled.
 * \return ::PAGODA_OK, ::PAGODA_ERR_INVALID_HANDLE or ::PAGODA_ERR_INVALID_ARGUMENT.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_get_stats(const pagoda_engine_t *engine,
                                                   pagoda_engine_stats_t *stats);

/** \brief Finite bucket bounds a ::pagoda_histogram_t holds at most. */
#define PAGODA_HISTOGRAM_MAX_BOUNDS 32

/**
 * \brief Durations in seconds counted into buckets with fixed upper bounds, as a Prometheus
 *        histogram exposes them: `cumulative_counts[i]` is `_bucket{le="upper_bounds[i]"}`,
 *        `count` is `_bucket{le="+Inf"}` and `_count`, `sum` is `_sum`.
 *
 * Its layout is fixed; it is part of ::pagoda_engine_metrics_t and has no `struct_size`.
 */
typedef struct pagoda_histogram {
    uint32_t n_bounds;                                     /**< Entries of `upper_bounds` in use. */
    double upper_bounds[PAGODA_HISTOGRAM_MAX_BOUNDS];      /**< Ascending, seconds; 0 past `n_bounds`. */
    uint64_t cumulative_counts[PAGODA_HISTOGRAM_MAX_BOUNDS]; /**< Observations ≤ `upper_bounds[i]`;
                                                                  0 past `n_bounds`. */
    uint64_t count;                                        /**< All observations. */
    double sum;                                            /**< Their sum, seconds. */
} pagoda_histogram_t;

/**
 * \brief What a serving host monitors; filled by pagoda_engine_get_metrics(). The counters
 *        only grow, from 0 when the engine is made. The histograms' bounds are vLLM's.
 */
typedef struct pagoda_engine_metrics {
    uint32_t struct_size;            /**< Set by the caller to sizeof(pagoda_engine_metrics_t). */
    int64_t requests_running;        /**< Gauge: requests holding KV blocks on the device. */
    int64_t requests_waiting;        /**< Gauge: submitted, not running (preempted by recompute included). */
    int64_t requests_swapped;        /**< Gauge: preempted by swap, waiting to come back. */
    int64_t kv_blocks_used;          /**< Gauge: device blocks held by requests (cached, unheld
                                          prefix blocks not counted: they are evictable). */
    int64_t kv_blocks_total;         /**< Blocks in the cache's pool (each device holds every block
                                          id, so this is every device's usage). */
    double kv_cache_usage;           /**< Gauge: `kv_blocks_used / kv_blocks_total`, 0 to 1. */
    int64_t prompt_tokens;           /**< Prompt tokens of the requests that produced a first
                                          token, whole prompts (prefix-cache hits included, each
                                          prompt once), as vLLM counts them. */
    int64_t prompt_tokens_computed;  /**< Prompt tokens the model computed (hits and recomputation
                                          excluded): ::pagoda_engine_stats_t::prompt_tokens. */
    int64_t generation_tokens;       /**< Tokens sampled. */
    int64_t requests_finished_stop;  /**< Requests ended by a stop token or a stop string. */
    int64_t requests_finished_length;  /**< Requests ended by `max_tokens` or a full context. */
    int64_t requests_finished_aborted; /**< Requests ended by pagoda_engine_abort(). */
    int64_t requests_finished_error;   /**< Requests ended by a failure. */
    int64_t preemptions_recompute;   /**< Preemptions by recompute. */
    int64_t preemptions_swap;        /**< Preemptions by swap. */
    int64_t prefix_cache_queries;    /**< Tokens looked up in the prefix cache, as vLLM counts
                                          them: every token of a request at each admission (again,
                                          generated ones included, after a preemption by
                                          recompute), while prefix caching is on and the
                                          reservation paged. */
    int64_t prefix_cache_hits;       /**< Of those, tokens found in the cache (not computed). */
    /** Submit to first token, once per request that produced one. */
    pagoda_histogram_t time_to_first_token;
    /** The gap between a request's successive steps that gave it tokens: one observation per
     *  later step (generated tokens − 1 for a one-sequence request). */
    pagoda_histogram_t inter_token_latency;
    /** Submit to end, once per finished request (all reasons). */
    pagoda_histogram_t e2e_request_latency;
    /** Submit to the first step that scheduled the request, once per request scheduled. */
    pagoda_histogram_t request_queue_time;
} pagoda_engine_metrics_t;

/**
 * \brief Reads the engine's serving metrics: gauges, counters and latency histograms.
 *
 * The histograms use vLLM's bounds: time to first token 0.001 … 2560 s, inter-token latency
 * 0.01 … 80 s, end-to-end and queue time 0.3 … 7680 s. Times come from a steady clock; the
 * engine records them once per step per request, so reading them costs the step nothing.
 * \param[in] engine the engine.
 * \param[in,out] metrics `struct_size` set by the caller; the rest is filled (no further than
 *                 `struct_size` bytes).
 * \return ::PAGODA_OK, ::PAGODA_ERR_INVALID_HANDLE or ::PAGODA_ERR_INVALID_ARGUMENT (NULL, or a
 *         `struct_size` too small).
 * \par Thread safety
 * Safe from any thread, also while another thread steps the engine. Each histogram's buckets,
 * sum and count are read together, so they agree; other fields are each read atomically and,
 * while the engine steps, may be a step apart from one another.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_get_metrics(const pagoda_engine_t *engine,
                                                     pagoda_engine_metrics_t *metrics);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_ENGINE_STATS_H */
