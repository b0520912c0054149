/**
 * \file engine.h
 * \brief The engine: continuous batching of many requests over a model and a paged KV cache.
 */
#ifndef PAGODA_ENGINE_H
#define PAGODA_ENGINE_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup engine Engine
 * \brief Requests are submitted at any time and return an id at once. Each
 *        pagoda_engine_step() schedules every runnable request under a token budget (new prompts
 *        and running decodes in one batch), runs the model once over the batch with paged
 *        attention, samples one token per sequence and queues the outputs; requests join and
 *        leave between steps. Outputs are read with pagoda_engine_poll() (one at a time),
 *        pagoda_engine_poll_batch() (many at once), pagoda_engine_step_poll() (a step and its
 *        outputs in one call) or a callback.
 *
 * Threads: pagoda_engine_submit_text(), pagoda_engine_submit_tokens(), pagoda_engine_abort(),
 * pagoda_engine_poll() and pagoda_engine_poll_batch() are safe from any thread;
 * pagoda_engine_step() and pagoda_engine_step_poll() run on one thread at a time. pagoda_engine_get_stats() and pagoda_engine_get_metrics() may be called from any
 * thread while another steps.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Why a request ended; ::PAGODA_FINISH_NONE while it runs. */
typedef enum pagoda_finish_reason {
    PAGODA_FINISH_NONE = 0,        /**< Still running: more outputs will come. */
    PAGODA_FINISH_LENGTH = 1,      /**< `max_tokens` generated, or the model's context is full. */
    PAGODA_FINISH_STOP_TOKEN = 2,  /**< An end-of-sequence or stop token id was generated. */
    PAGODA_FINISH_STOP_STRING = 3, /**< A stop string appeared in the text. */
    PAGODA_FINISH_ABORTED = 4,     /**< pagoda_engine_abort() was called. */
    PAGODA_FINISH_ERROR = 5        /**< It failed; ::pagoda_output_t::status and `error` say why. */
} pagoda_finish_reason_t;

/** \brief ::pagoda_request_options_t::flags: generate past end-of-sequence tokens. */
#define PAGODA_REQUEST_IGNORE_EOS 1u
/** \brief ::pagoda_request_options_t::flags: keep special tokens in the output text. */
#define PAGODA_REQUEST_KEEP_SPECIAL_TEXT 2u
/** \brief ::pagoda_request_options_t::flags: end the text with the stop string that matched. */
#define PAGODA_REQUEST_INCLUDE_STOP_STRING 4u
/** \brief ::pagoda_request_options_t::flags: do not add BOS (or the template's tokens) to a text prompt. */
#define PAGODA_REQUEST_NO_SPECIAL_TOKENS 8u

/** \brief A request's sampling and stopping. Initialise with pagoda_request_options_default(). */
typedef struct pagoda_request_options {
    uint32_t struct_size;          /**< sizeof(pagoda_request_options_t) as the caller knows it. */
    uint32_t flags;                /**< PAGODA_REQUEST_* bits. */
    int32_t max_tokens;            /**< Tokens to generate at most; default 256. */
    float temperature;             /**< 0 = greedy; default 1. */
    int32_t top_k;                 /**< Keep the k most likely; 0 = all (default). */
    float top_p;                   /**< Nucleus mass; 1 = all (default). */
    float min_p;                   /**< Drop tokens below min_p × the top probability; 0 = off. */
    float repetition_penalty;      /**< Divides positive logits of seen tokens (multiplies negative); 1 = off. */
    float presence_penalty;        /**< Subtracted once from generated tokens' logits; 0 = off. */
    float frequency_penalty;       /**< Subtracted per occurrence of generated tokens; 0 = off. */
    uint64_t seed;                 /**< Random seed; with the same seed a request draws the same tokens. */
    const int32_t *stop_token_ids; /**< Extra ids that end the request (copied at submit). */
    size_t n_stop_token_ids;       /**< Entries of `stop_token_ids`. */
    const char *const *stop_strings; /**< NUL-terminated strings that end the request (copied). */
    size_t n_stop_strings;         /**< Entries of `stop_strings`. */
    int32_t logprobs;              /**< Per generated token, the top-n log-probabilities; -1 = none (default), 0 = the chosen token's only. */
    int32_t prompt_logprobs;       /**< Per prompt token, its log-probability and the top-n; -1 = none (default). */
    int32_t n;                     /**< Sequences to return; default 1. They share the prompt's KV blocks. */
    int32_t best_of;               /**< Sequences to generate, the `n` with the highest cumulative
                                        log-probability returned; 0 = `n` (default). */
    int32_t beam_width;            /**< > 0: beam search of this width instead of sampling; returns the
                                        `n` best beams (`n` ≤ width). Default 0. */
    float length_penalty;          /**< Beam scores are cumulative logprob / length^this (length: generated
                                        tokens, a final end-of-sequence token included); default 1. */
    int32_t early_stopping;        /**< Beam search ends when `beam_width` hypotheses are done (1), or
                                        when no running beam can beat them (0, default; vLLM's "False"). */
    int32_t priority;              /**< Lower runs first among waiting requests; ties FCFS. Default 0. */
} pagoda_request_options_t;

/** \brief A token and its log-probability under the model's distribution (before sampling options). */
typedef struct pagoda_logprob {
    int32_t token_id; /**< The token. */
    float logprob;    /**< Natural log of its probability. */
} pagoda_logprob_t;

/**
 * \brief What a request produced since its previous output. Filled by pagoda_engine_poll();
 *        the pointers stay valid until the next poll on the same engine.
 */
typedef struct pagoda_output {
    uint32_t struct_size;                /**< Set by the caller to sizeof(pagoda_output_t). */
    uint64_t request_id;                 /**< The id submit returned. */
    int32_t finish_reason;               /**< A ::pagoda_finish_reason_t: NONE while the sequence
                                              runs; set on its last output (`request_finished`
                                              marks the request's). */
    int32_t status;                      /**< A ::pagoda_status_t: ::PAGODA_OK unless
                                              `finish_reason` is ERROR. */
    const char *error;                   /**< The failure's message when ERROR, else `""`. */
    const int32_t *token_ids;            /**< New tokens; NULL when `n_tokens` is 0. */
    size_t n_tokens;                     /**< Entries of `token_ids`. */
    const char *text;                    /**< New text, UTF-8, whole characters only, NUL-terminated. */
    size_t text_len;                     /**< Bytes of `text`. */
    const float *logprobs;               /**< Per new token its log-probability, or NULL (not asked). */
    const pagoda_logprob_t *top_logprobs; /**< `[n_tokens][n_top_logprobs]`, most likely first, or NULL. */
    int32_t n_top_logprobs;              /**< Entries per token in `top_logprobs`. */
    size_t n_prompt_tokens;              /**< Tokens in the prompt. */
    size_t n_generated;                  /**< Tokens generated so far, these included. */
    /** Per prompt position its token's log-probability given the tokens before it (NaN for
     *  position 0, which has none); in the first output only, when asked, else NULL. */
    const float *prompt_logprobs;
    /** `[n_prompt_tokens][n_prompt_top_logprobs]` (position 0: ids -1), or NULL. */
    const pagoda_logprob_t *prompt_top_logprobs;
    int32_t n_prompt_top_logprobs;       /**< Entries per position in `prompt_top_logprobs`. */
    int32_t sequence_index;              /**< Which of the request's `n` sequences (0 when n = 1). For
                                              beam search, its rank among the returned beams; with
                                              `best_of` > `n`, its rank by cumulative logprob. */
    float cumulative_logprob;            /**< Sum of the sequence's token log-probabilities so far. */
    int32_t request_finished;            /**< 1 on the request's very last output (all sequences done). */
} pagoda_output_t;

/** \brief Called with each output once pagoda_engine_step() (or pagoda_engine_abort()) has
 *  produced it, on that call's thread, outside the engine's lock: it may submit and abort.
 *  The output is valid during the call only. When set, outputs are not queued for polling. */
typedef void (*pagoda_output_fn)(void *user, const pagoda_output_t *output);

/** \brief How the engine batches. Initialise with pagoda_engine_options_default(). */
typedef struct pagoda_engine_options {
    uint32_t struct_size;           /**< sizeof(pagoda_engine_options_t) as the caller knows it. */
    int32_t max_num_seqs;           /**< Sequences in one step at most; default 256. */
    int32_t max_num_batched_tokens; /**< Tokens in one step at most (prompt tokens plus one per
                                         decode); default 2048. A longer prompt runs in chunks. */
    pagoda_output_fn on_output;     /**< Output callback, or NULL to queue outputs for polling. */
    void *on_output_user;           /**< Passed to `on_output`. */
    int32_t preemption;             /**< A ::pagoda_preemption_t; default ::PAGODA_PREEMPT_AUTO. */
    int32_t kv_reservation;         /**< A ::pagoda_kv_reservation_t; default ::PAGODA_KV_PAGED. */
    int32_t decode_graphs;          /**< A ::pagoda_decode_graphs_t; default ::PAGODA_DECODE_GRAPHS_AUTO. */
    int32_t device_sampling;        /**< A ::pagoda_device_sampling_t; default ::PAGODA_DEVICE_SAMPLING_AUTO. */
    /**
     * The type of the activations between kernels: ::PAGODA_DTYPE_F32, ::PAGODA_DTYPE_BF16 or
     * ::PAGODA_DTYPE_F16; compute stays f32, and the residual stream and the logits stay f32.
     * 0 (the default) picks: on a device apart from the host (a GPU), the weights' type when
     * they are bf16 or f16 and the backend runs every op in it; f32 otherwise.
     */
    int32_t activation_dtype;
    /**
     * On a pipeline of several stages: how many micro-batches a step's sequences are cut into,
     * so that the stages work at the same time (each runs micro-batch i while the next runs
     * i − 1); 1 = none; 0 (the default) = one per stage when each gets at least 128 tokens,
     * fewer otherwise (a decode step, bound by reading the weights, which each micro-batch reads
     * again, is not cut). Long prefill chunks are also cut into
     * the plan's TeraPipe slices when the plan has a slicing. Ignored by a single stage.
     * (64 bits wide so that it starts past the 0.1 struct's tail padding.)
     * \since 0.1
     */
    int64_t pipeline_micro_batches;
} pagoda_engine_options_t;

/**
 * \brief Where the engine picks tokens. On the device, a step's logits stay there and only one
 *        token and its log-probability per sequence come back (PAGODA_OP_SAMPLE: greedy,
 *        temperature, top-k, top-p, min-p). Steps that need the whole distribution on the host
 *        sample there anyway: repetition, presence or frequency penalties, top log-probabilities,
 *        prompt log-probabilities, beam search, and the first draw of a request with several
 *        sequences. The seeded draws differ between the two places, each reproducible.
 */
typedef enum pagoda_device_sampling {
    /** On the device where its memory is apart from the host's (a GPU), so that the logits need
     *  not cross; on the host otherwise. */
    PAGODA_DEVICE_SAMPLING_AUTO = 0,
    PAGODA_DEVICE_SAMPLING_ON = 1,  /**< On the device wherever its backend runs PAGODA_OP_SAMPLE. */
    PAGODA_DEVICE_SAMPLING_OFF = 2  /**< Always on the host. */
} pagoda_device_sampling_t;

/**
 * \brief Whether decode steps are recorded once per batch-size bucket and replayed as graphs
 *        (CUDA graphs): a step whose sequences each decode one token is padded to the next
 *        bucket (1, 2, 4, 8, 16, 24, 32, then every 16 up to 256) and launched as one graph
 *        instead of hundreds of kernels.
 */
typedef enum pagoda_decode_graphs {
    /** Graphs where the backend records them and its kernels run apart from the host (a GPU);
     *  op by op on a device that runs kernels on the host (the CPU backend), where a launch
     *  costs little and the padding rows would cost compute. */
    PAGODA_DECODE_GRAPHS_AUTO = 0,
    PAGODA_DECODE_GRAPHS_ON = 1,  /**< Graphs wherever the backend records them. */
    PAGODA_DECODE_GRAPHS_OFF = 2  /**< Op by op, never padded. */
} pagoda_decode_graphs_t;

/** \brief What the engine does when running sequences need KV blocks and none are free: it
 *  preempts the latest-arrived request, all of its sequences at once. A request with several
 *  sequences is never recomputed: when the swap space cannot hold them all it ends with
 *  ::PAGODA_FINISH_ERROR (::PAGODA_ERR_OUT_OF_MEMORY). */
typedef enum pagoda_preemption {
    PAGODA_PREEMPT_AUTO = 0,      /**< vLLM's rule: recompute single-sequence requests, swap the others. */
    PAGODA_PREEMPT_RECOMPUTE = 1, /**< Free the blocks; prefill prompt and generated tokens again later
                                       (requests with several sequences are swapped regardless). */
    PAGODA_PREEMPT_SWAP = 2       /**< Copy the blocks to host swap space and back when resumed. */
} pagoda_preemption_t;

/** \brief How KV memory is lent to requests. */
typedef enum pagoda_kv_reservation {
    PAGODA_KV_PAGED = 0,     /**< Block by block as tokens arrive (PagedAttention). */
    PAGODA_KV_CONTIGUOUS = 1 /**< Baseline for comparisons: blocks for prompt + `max_tokens` reserved
                                  at admission, as Orca(Max)/FasterTransformer reserve them. */
} pagoda_kv_reservation_t;

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

/**
 * \brief Fills the first `size` bytes of `options` with the defaults.
 *
 * Call it as pagoda_engine_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_engine_options_init(pagoda_engine_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_engine_options_init() with the caller's struct size. */
#define pagoda_engine_options_default(options) pagoda_engine_options_init((options), sizeof *(options))

/**
 * \brief Fills the first `size` bytes of `options` with the defaults: temperature 1, 256
 * tokens, n = 1, no penalties, seed 0.
 *
 * Call it as pagoda_request_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_request_options_init(pagoda_request_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_request_options_init() with the caller's struct size. */
#define pagoda_request_options_default(options) pagoda_request_options_init((options), sizeof *(options))

/**
 * \brief Makes an engine serving `model` on `mesh` with `cache`.
 *
 * On a mesh of several devices the engine runs the cache's layout: each pipeline stage on its
 * devices, tensor-parallel over them, with a worker thread per device; a step's sequences flow
 * through the stages in micro-batches (`pipeline_micro_batches`), and long prefill chunks in the
 * plan's TeraPipe slices. Decode graphs and sampling on the device are single-device features
 * for now (their ON settings are refused on a mesh), and activations stay f32 there.
 * \param[in] model the model.
 * \param[in] mesh the devices; the cache must live on them.
 * \param[in] plan NULL to run the layout the cache was made with; otherwise a plan that must give
 *            the same layout (the cache and the engine are made with the same plan).
 * \param[in] cache the KV cache, made for this model; it serves one engine at a time. The engine
 *            keeps the model, the mesh and the cache alive: their handles may be destroyed
 *            before it, in any order.
 * \param[in] options NULL for the defaults.
 * \param[out] out the engine; release with pagoda_engine_destroy().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT (a cache made for another model, mesh or
 *         plan, or already serving an engine); ::PAGODA_ERR_UNSUPPORTED (an op or dtype the
 *         backend lacks, a single-device option set to ON on a mesh); ::PAGODA_ERR_OUT_OF_MEMORY.
 * \par Thread safety
 * Safe from any thread, also with other engines being made or stepping on the same model and mesh;
 * a cache serves one engine at a time (a second create on it fails).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_create(const pagoda_model_t *model,
                                                const pagoda_mesh_t *mesh,
                                                const pagoda_plan_t *plan,
                                                pagoda_kv_cache_t *cache,
                                                const pagoda_engine_options_t *options,
                                                pagoda_engine_t **out);

/**
 * \brief Aborts every request and releases the engine; its KV blocks return to the cache, which
 *        may then serve another engine (or goes too, if its handle was destroyed already).
 * \param[in] engine the handle, or NULL.
 * \par Thread safety
 * Not while another call on this engine runs; the outputs a poll handed out go with it.
 * \since 0.1
 */
PAGODA_API void pagoda_engine_destroy(pagoda_engine_t *engine);

/**
 * \brief Submits a text prompt, tokenized with the model's tokenizer (adding BOS or the
 *        template's tokens unless ::PAGODA_REQUEST_NO_SPECIAL_TOKENS).
 * \param[in] engine the engine.
 * \param[in] text UTF-8 prompt.
 * \param[in] text_len bytes of `text`.
 * \param[in] options NULL for the defaults.
 * \param[out] request_id the new request's id (never 0).
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for bad options, an empty prompt or one
 *         longer than the model's context or the whole cache; ::PAGODA_ERR_NOT_FOUND when the
 *         model has no tokenizer.
 * \par Thread safety
 * Safe from any thread, also while another thread steps or polls.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_submit_text(pagoda_engine_t *engine, const char *text,
                                                     size_t text_len,
                                                     const pagoda_request_options_t *options,
                                                     uint64_t *request_id);

/**
 * \brief Submits a prompt of token ids.
 * \param[in] engine the engine.
 * \param[in] ids the prompt (copied).
 * \param[in] n_ids entries of `ids`, at least 1.
 * \param[in] options NULL for the defaults.
 * \param[out] request_id the new request's id (never 0).
 * \return as pagoda_engine_submit_text(), and ::PAGODA_ERR_INVALID_ARGUMENT for an id outside
 *         the vocabulary.
 * \par Thread safety
 * Safe from any thread, also while another thread steps or polls.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_submit_tokens(pagoda_engine_t *engine,
                                                       const int32_t *ids, size_t n_ids,
                                                       const pagoda_request_options_t *options,
                                                       uint64_t *request_id);

/**
 * \brief Ends a request now: frees its KV blocks and queues its last output (ABORTED).
 * \param[in] engine the engine.
 * \param[in] request_id the request.
 * \return ::PAGODA_OK; ::PAGODA_ERR_NOT_FOUND when no such request is live (finished requests
 *         are not).
 * \par Thread safety
 * Safe from any thread, also while another thread steps or polls.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_abort(pagoda_engine_t *engine, uint64_t request_id);

/**
 * \brief Runs one iteration: schedule, run the model over the batch, sample, emit.
 * \param[in] engine the engine.
 * \return ::PAGODA_OK (also when there was nothing to do); ::PAGODA_ERR_BACKEND when the
 *         device failed, after which every running request has ended with ERROR.
 * \par Thread safety
 * One thread at a time per engine (calls from two threads at once are serialized, not parallel);
 * submit, abort, poll and the statistics may run alongside it.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_step(pagoda_engine_t *engine);

/**
 * \brief Whether any request is waiting or running.
 * \param[in] engine the engine.
 * \return 1 or 0 (0 for an invalid handle).
 * \par Thread safety
 * Safe from any thread; the answer may be stale by the time it returns when other threads submit or
 * step.
 * \since 0.1
 */
PAGODA_API int pagoda_engine_has_work(const pagoda_engine_t *engine);

/**
 * \brief Whether any request is waiting or running, or why it cannot be told.
 * \param[in] engine the engine.
 * \param[out] has_work 1 or 0; 0 on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed engine;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `has_work`.
 * \par Thread safety
 * Safe from any thread; the answer may be stale by the time it returns when other threads submit
 * or step.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_has_work_v2(const pagoda_engine_t *engine, int32_t *has_work);

/**
 * \brief Takes the oldest queued output.
 * \param[in] engine the engine.
 * \param[in,out] output `struct_size` set by the caller; filled on ::PAGODA_OK. Its pointers
 *                stay valid until the calling thread polls this engine again (whatever that
 *                poll returns), or the engine is destroyed: each polling thread has its own
 *                storage, released by its next poll.
 * \return ::PAGODA_OK; ::PAGODA_ERR_EMPTY when none is queued (the message is not set).
 * \par Thread safety
 * Safe from any thread, also while another thread steps or polls; each output goes to one caller.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_poll(pagoda_engine_t *engine, pagoda_output_t *output);

/**
 * \brief Takes up to `capacity` of the oldest queued outputs in one call: what calling
 *        pagoda_engine_poll() until ::PAGODA_ERR_EMPTY takes, for a host to whom each call into
 *        the library costs (a binding reads a whole step's outputs in one FFI crossing).
 * \param[in] engine the engine.
 * \param[in,out] outputs `capacity` outputs one after the other, `outputs[0].struct_size` bytes
 *                apart: the caller sets `struct_size` in the first entry only, and it is the
 *                array's stride (`sizeof(pagoda_output_t)` with this header). The first
 *                `*n_polled` entries are filled, oldest first, each with `struct_size` set to
 *                the stride (so the array can be passed again as it is; fields past the
 *                library's own struct are not written). Their pointers stay valid as
 *                pagoda_engine_poll()'s do: until the calling thread polls this engine again,
 *                with either function.
 * \param[in] capacity entries in `outputs`, at least 1.
 * \param[out] n_polled outputs taken; fewer than `capacity` (0 included) when the queue ran out.
 * \return ::PAGODA_OK, also when none was queued (`*n_polled` is 0);
 *         ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed engine;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `outputs` or `n_polled`, a zero `capacity`,
 *         or an `outputs[0].struct_size` unset or (with `capacity` > 1) not a multiple of the
 *         struct's alignment.
 * \par Thread safety
 * As pagoda_engine_poll().
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_poll_batch(pagoda_engine_t *engine, pagoda_output_t *outputs,
                                                    size_t capacity, size_t *n_polled);

/**
 * \brief One iteration, then the oldest queued outputs: pagoda_engine_step() and
 *        pagoda_engine_poll_batch() in one call, as vLLM's `step()` returns what it produced.
 *        A host streaming one token a step makes one call into the library per token.
 * \param[in] engine the engine.
 * \param[in,out] outputs as for pagoda_engine_poll_batch().
 * \param[in] capacity entries in `outputs`, at least 1.
 * \param[out] n_polled outputs taken, oldest first (outputs queued before the step come first);
 *                      those past `capacity` stay queued for the next poll.
 * \return ::PAGODA_OK; the step's failure as pagoda_engine_step() returns it (`*n_polled` is 0
 *         and the failed requests' ERROR outputs stay queued); ::PAGODA_ERR_INVALID_HANDLE;
 *         ::PAGODA_ERR_INVALID_ARGUMENT as for pagoda_engine_poll_batch(), checked before the
 *         step (a refused call has not stepped).
 * \par Thread safety
 * As pagoda_engine_step(): one step at a time per engine.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_step_poll(pagoda_engine_t *engine, pagoda_output_t *outputs,
                                                   size_t capacity, size_t *n_polled);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_ENGINE_H */
