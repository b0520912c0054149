/**
 * \file model.h
 * \brief Models: opening a GGUF file or a Hugging Face folder, with progress and cancellation.
 */
#ifndef PAGODA_MODEL_H
#define PAGODA_MODEL_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup model Models
 * \brief A model is a description plus weights. Opening maps the files (weights are never
 *        copied when a backend can use host memory as is), checks every tensor against the
 *        config, and pages the weights in. Nothing is placed on a device until an engine is made.
 *
 * Supported: GGUF v2/v3 (`llama` (Mixtral too), `qwen2`, `qwen3`, `qwen3moe`, `gemma2`, `gemma3`,
 * `phi3` architectures; F32, F16 and BF16 tensors, and Q4_0,
 * Q8_0, Q4_K, Q5_K and Q6_K ones, kept as stored where the backend decodes them (CPU, CUDA) and
 * widened to F32 for one that does not) and
 * Hugging Face folders (`config.json`, `model.safetensors` or shards with
 * `model.safetensors.index.json`, `tokenizer.json`, `generation_config.json`) of
 * LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM,
 * Gemma3ForCausalLM (text), Phi3ForCausalLM, MixtralForCausalLM and Qwen3MoeForCausalLM. An open
 * model is immutable: every
 * function taking a `const pagoda_model_t *` is safe from any thread.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief Called as opening advances.
 * \param[in] user ::pagoda_model_options_t::progress_user.
 * \param[in] fraction done so far, from 0 to 1, never decreasing.
 * \param[in] stage what is being done now ("paging in weights"); valid during the call.
 * \return nonzero to go on, 0 to cancel (the open then fails with ::PAGODA_ERR_CANCELLED).
 */
typedef int (*pagoda_progress_fn)(void *user, float fraction, const char *stage);

/** \brief How to open a model. Initialise with pagoda_model_options_default(). */
typedef struct pagoda_model_options {
    uint32_t struct_size;        /**< sizeof(pagoda_model_options_t) as the caller knows it. */
    pagoda_progress_fn progress; /**< Progress callback, or NULL. Runs on the opening thread. */
    void *progress_user;         /**< Passed to `progress`. */
} pagoda_model_options_t;

/** \brief What a model is; filled by pagoda_model_get_info(). */
typedef struct pagoda_model_info {
    uint32_t struct_size;       /**< Set by the caller to sizeof(pagoda_model_info_t). */
    /** The architecture (`"llama"`, `"mistral"`, `"qwen2"`, `"qwen3"`, `"gemma2"`, `"gemma3"`,
     *  `"phi3"`, `"mixtral"`, `"qwen3moe"`), NUL-terminated. */
    char architecture[32];
    int64_t vocab_size;         /**< Rows of the embedding. */
    int64_t hidden_size;        /**< Model width. */
    int64_t intermediate_size;  /**< FFN width. */
    int64_t n_layers;           /**< Decoder layers. */
    int64_t n_heads;            /**< Query heads. */
    int64_t n_kv_heads;         /**< Key/value heads. */
    int64_t head_dim;           /**< Elements per head. */
    int64_t max_position;       /**< The trained context length. */
    uint64_t n_parameters;      /**< Weights in all tensors (tied ones once). */
    int32_t bos_token_id;       /**< -1 when none. */
    int32_t eos_token_id;       /**< The first end-of-sequence id; -1 when none. */
    /* Appended in 0.9: mixtures of experts (all 0 for a dense model). */
    int64_t n_experts;          /**< Experts of each sparse layer. */
    int64_t experts_per_token;  /**< Experts each token is routed to (top k). */
    int64_t expert_intermediate_size; /**< Each expert's MLP width. */
    int64_t n_sparse_layers;    /**< Layers whose MLP is the mixture (the others are dense). */
} pagoda_model_info_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults (no progress callback).
 *
 * Call it as pagoda_model_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_model_options_init(pagoda_model_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_model_options_init() with the caller's struct size. */
#define pagoda_model_options_default(options) pagoda_model_options_init((options), sizeof *(options))

/**
 * \brief Opens a model, blocking until it is ready.
 * \param[in] path a `.gguf` file, or a Hugging Face model folder.
 * \param[in] options NULL for the defaults.
 * \param[out] out the model; release with pagoda_model_destroy().
 * \return ::PAGODA_OK; ::PAGODA_ERR_NOT_FOUND (no such file, a missing config or shard),
 *         ::PAGODA_ERR_FORMAT (malformed file; the message names the file, tensor or key),
 *         ::PAGODA_ERR_UNSUPPORTED (architecture, tensor type or feature; the message lists what
 *         is supported), ::PAGODA_ERR_CANCELLED (the callback asked).
 * \par Thread safety
 * Safe from any thread; the progress callback runs on the calling thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_open(const char *path,
                                             const pagoda_model_options_t *options,
                                             pagoda_model_t **out);

/** \brief An open running in the background: poll its progress, cancel it, collect the model. */
typedef struct pagoda_model_loader pagoda_model_loader_t;

/**
 * \brief Starts opening a model on a background thread and returns at once.
 *
 * For hosts that would rather poll than take a callback (FFI, event loops).
 * \param[in] path as pagoda_model_open().
 * \param[in] options as pagoda_model_open(); a progress callback, if set, runs on the
 *            background thread.
 * \param[out] out the loader; finish it with pagoda_model_loader_finish().
 * \return ::PAGODA_OK, or ::PAGODA_ERR_INVALID_ARGUMENT. Errors of the open itself come from
 *         pagoda_model_loader_finish().
 * \par Thread safety
 * Safe from any thread; the progress callback runs on the loader's background thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_load_start(const char *path,
                                                   const pagoda_model_options_t *options,
                                                   pagoda_model_loader_t **out);

/**
 * \brief How far the background open has come.
 * \param[in] loader the loader.
 * \param[out] fraction from 0 to 1.
 * \param[out] done 1 when the open has ended (successfully or not), else 0; may be NULL.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or dead `loader`;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `fraction`.
 * \par Thread safety
 * Safe from any thread, concurrently with the other loader calls except finish.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_loader_progress(const pagoda_model_loader_t *loader,
                                                        float *fraction, int *done);

/**
 * \brief Asks the background open to stop; it ends with ::PAGODA_ERR_CANCELLED soon after.
 * \param[in] loader the loader.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API void pagoda_model_loader_cancel(pagoda_model_loader_t *loader);

/**
 * \brief Waits for the background open to end, releases the loader and hands over the model.
 * \param[in] loader the loader; invalid afterwards, whatever the result.
 * \param[out] out the model on success, NULL otherwise.
 * \return what pagoda_model_open() would have returned; the message is set on this thread.
 * \par Thread safety
 * Once per loader, from any thread, while no other call on the same loader runs.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_loader_finish(pagoda_model_loader_t *loader,
                                                      pagoda_model_t **out);

/**
 * \brief Releases a model. Engines and KV caches made from it keep what they need alive.
 * \param[in] model the handle, or NULL.
 * \par Thread safety
 * Not while another call on this handle runs; tokenizers, plans, caches and engines made from the
 * model keep what they need of it.
 * \since 0.1
 */
PAGODA_API void pagoda_model_destroy(pagoda_model_t *model);

/**
 * \brief Describes a model.
 * \param[in] model the handle.
 * \param[in,out] info `struct_size` set by the caller; the rest is filled.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or dead `model`;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `info` or an unset `struct_size`.
 * \par Thread safety
 * Safe from any thread (a model never changes after opening).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_get_info(const pagoda_model_t *model,
                                             pagoda_model_info_t *info);

/**
 * \brief The file or folder the model was opened from.
 * \param[in] model the handle.
 * \return a string valid as long as the model, or NULL for an invalid handle.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_model_path(const pagoda_model_t *model);

/**
 * \brief The file or folder the model was opened from, or why it cannot be told.
 * \param[in] model the handle.
 * \param[out] path a string valid as long as the model; NULL on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed model;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `path`.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_path_v2(const pagoda_model_t *model, const char **path);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_MODEL_H */
