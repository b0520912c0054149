/**
 * \file engine.h
 * \brief The engine: continuous batching of many requests over a model and a paged KV cache.
 */
#ifndef PAGODA_ENGINE_H
#define PAGODA_ENGINE_H

#include "pagoda/common.h"
#include "pagoda/engine_stats.h"
#include "pagoda/kernel_choice.h"
#include "pagoda/request.h"
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
 * pagoda_engine_step() and pagoda_engine_step_poll() run on one thread at a time.
 * pagoda_engine_get_stats() and pagoda_engine_get_metrics() may be called from any thread while
 * another steps.
 *
 * Three headers, all included by this one: request.h (a request's options and outputs), this
 * (making and driving an engine), engine_stats.h (what it reports).
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

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
     * they are bf16 or f16 and the backend runs every op in it, f16 for block-quantized
     * weights unless `quantized_matmul` is ::PAGODA_QUANTIZED_MATMUL_EXACT; f32 otherwise.
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
    /**
     * How products on block-quantized weights (GGUF's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) treat the
     * activations: a ::pagoda_quantized_matmul_t; 0, the default, is
     * ::PAGODA_QUANTIZED_MATMUL_AUTO.
     * \since 0.1
     */
    int32_t quantized_matmul;
    /**
     * A kernel choice file (kernel_choice.h; `pagoda tune` writes one), or NULL for none. Read
     * when the engine is created (a missing file is an error unless `kernel_choice` is
     * ::PAGODA_KERNEL_CHOICE_MEASURE, which creates it); the path need not outlive the call.
     * \since 0.1
     */
    const char *kernel_choices_file;
    /**
     * How the engine picks among a backend's kernels for each product: a
     * ::pagoda_kernel_choice_t; 0, the default, is ::PAGODA_KERNEL_CHOICE_FILE (the file's
     * choices where it has them, the backend's rules elsewhere).
     * \since 0.1
     */
    int32_t kernel_choice;
} pagoda_engine_options_t;

/**
 * \brief Whether products on block-quantized weights may round their operands.
 *
 * With the leave, a backend may round each run of 32 activations to int8 with a scale
 * (ops.h's ::PAGODA_MATMUL_QUANTIZE_X), or each 256 on K-quant weights
 * (::PAGODA_MATMUL_QUANTIZE_X_BLOCK), and multiply bytes by bytes, as llama.cpp's and vLLM's
 * GGUF kernels do: each activation moves by at most 1/254 of its run's largest magnitude, far
 * less than the weights' own rounding, and a decode step on the CPU backend runs faster. With
 * half activations it may also round the decoded weights to their type (ops.h's
 * ::PAGODA_MATMUL_ROUND_W), which lets a GPU run batched products on its tensor cores; on a GPU
 * the activations of such a model are f16 by default (see `activation_dtype`). Plain (F32,
 * BF16, F16) weights are never affected.
 */
typedef enum pagoda_quantized_matmul {
    /** Rounded operands where the backend takes the leave (the CPU backend: 8-bit activations
     *  in decode steps of up to 8 sequences on Q8_0 (16 with AVX-512), 16 on the K types (per
     *  256), 2 on Q4_0; the CUDA backend: f16 activations, and weights rounded to f16 in
     *  products of more than 8 rows). */
    PAGODA_QUANTIZED_MATMUL_AUTO = 0,
    /** Activations as they are (f32 by default on every device), computed in f32 from the
     *  decoded weights. */
    PAGODA_QUANTIZED_MATMUL_EXACT = 1
} pagoda_quantized_matmul_t;

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
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for bad options (a logit control
 *         naming an id outside the vocabulary, or given with beam search, included), an empty
 *         prompt or one longer than the model's context or the whole cache;
 *         ::PAGODA_ERR_NOT_FOUND when the model has no tokenizer; ::PAGODA_ERR_UNSUPPORTED for
 *         a `logits_processor` on a mesh over processes, and for an embedding request
 *         (::PAGODA_REQUEST_EMBED) on a mesh over processes or asking for the
 *         model's pooling when its files name one the engine does not do.
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
 *         are not); ::PAGODA_ERR_UNSUPPORTED on a rank other than 0 of a mesh over processes.
 *         On a mesh over processes the request ends at the next step, on every rank.
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
 * \brief On a rank other than 0 of a mesh over several processes (mesh.h): takes part in rank
 *        0's steps until rank 0's engine is destroyed.
 *
 * Every rank makes the same engine; rank 0 alone takes submissions and aborts, and at each of
 * its steps hands what arrived to the others, which schedule and sample exactly as it does (its
 * outputs are rank 0's; the followers' are dropped). A follower's submit and abort fail with
 * ::PAGODA_ERR_UNSUPPORTED. Rank 0's pagoda_engine_destroy() tells the followers to stop, and
 * waits for each to hear it or to be gone: every follower's host calls this.
 * \param[in] engine an engine on a rank other than 0.
 * \return ::PAGODA_OK once rank 0's engine has gone; ::PAGODA_ERR_INVALID_ARGUMENT on rank 0 or
 *         a mesh in one process; ::PAGODA_ERR_BACKEND when a step failed or another rank died
 *         (then within the mesh's `timeout_ms`).
 * \par Thread safety
 * One thread; the other calls on the engine have nothing to do meanwhile.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_engine_follow(pagoda_engine_t *engine);

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
