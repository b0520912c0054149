/**
 * \file request.h
 * \brief Requests: what one asks of the engine (sampling, stopping, logprobs, n and beams) and the
 *        outputs it produces.
 */
#ifndef PAGODA_REQUEST_H
#define PAGODA_REQUEST_H

#include "pagoda/common.h"
#include "pagoda/constraint.h"

/**
 * \addtogroup engine
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Why a request ended; ::PAGODA_FINISH_NONE while it runs. */
typedef enum pagoda_finish_reason {
    PAGODA_FINISH_NONE = 0,        /**< Still running: more outputs will come. */
    PAGODA_FINISH_LENGTH = 1,      /**< `max_tokens` generated, or the model's context is full. */
    PAGODA_FINISH_STOP_TOKEN = 2,  /**< An end-of-sequence or stop token id was generated; an
                                        embedding request's prompt was computed. */
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
/** \brief ::pagoda_request_options_t::flags: ignore `seed` and draw a fresh one from the operating
 *  system at submit, so two such requests differ. Without it the default seed 0 makes every
 *  request with the same options draw the same tokens. The drawn seed is what every rank of a
 *  mesh over processes samples with. \since 0.1 */
#define PAGODA_REQUEST_FRESH_SEED 16u
/** \brief ::pagoda_request_options_t::flags: an embedding request. The prompt is computed in the
 *  engine's batches like any other (chunked prefill, prefix caching and preemption apply) but
 *  nothing is generated: its one output, once the whole prompt is computed, carries
 *  ::pagoda_output_t::embedding, the prompt's hidden states after the model's final norm pooled
 *  as `pooling` says and normalized as `embedding_normalize` says (vLLM's pooling runner).
 *
 *  Such a request takes a prompt as long as the model's context (no room is kept for a
 *  generated token). It refuses with ::PAGODA_ERR_INVALID_ARGUMENT, naming the field, what
 *  has no meaning without generation: `n` or `best_of` above 1, `beam_width`, `logprobs` or
 *  `prompt_logprobs` other than -1, stop token ids or strings, logit controls (`logit_bias`,
 *  `bad_words`, `allowed_token_ids`, `min_tokens`, `logits_processor`) and a constraint.
 *  `max_tokens` and the sampling fields (temperature, top-k/p, min-p, penalties, seed and the
 *  other flags) are not read. Only an engine over one device serves them: on a multi-device
 *  mesh, or one over processes, submit fails with ::PAGODA_ERR_UNSUPPORTED naming the mesh.
 *  \since 0.1 */
#define PAGODA_REQUEST_EMBED 32u

/** \brief How an embedding request (::PAGODA_REQUEST_EMBED) pools the hidden states of its
 *  prompt's tokens into one vector (::pagoda_request_options_t::pooling). \since 0.1 */
typedef enum pagoda_pooling {
    /** The model's own pooling, as vLLM reads it: the `pooling_mode_*` of a
     *  sentence-transformers Pooling module (modules.json beside a Hugging Face checkpoint), or
     *  a GGUF file's `{arch}.pooling_type` (llama.cpp's). A plain decoder checkpoint names
     *  none: then ::PAGODA_POOLING_LAST, vLLM's default for decoder embedding models. A pooling
     *  named there that the engine does not do (CLS, max, ...) fails the submit with
     *  ::PAGODA_ERR_UNSUPPORTED naming it, rather than pooling otherwise. */
    PAGODA_POOLING_MODEL = 0,
    /** The last prompt token's hidden state: with causal attention the only one that has seen
     *  the whole prompt. */
    PAGODA_POOLING_LAST = 1,
    /** The mean of every prompt token's hidden state. Such a request takes no cached prefix
     *  (every token's state is needed), though its blocks are cached for others. */
    PAGODA_POOLING_MEAN = 2
} pagoda_pooling_t;

/** \brief Whether an embedding request's pooled vector is scaled to unit length
 *  (::pagoda_request_options_t::embedding_normalize). \since 0.1 */
typedef enum pagoda_embedding_normalize {
    /** The model's own rule, as vLLM reads it: L2 when a sentence-transformers modules.json
     *  lists a Normalize module, as pooled when it lists none; L2 when there is no modules.json
     *  (a plain decoder checkpoint or a GGUF file), vLLM's default for decoder embedding
     *  models. */
    PAGODA_EMBEDDING_NORMALIZE_MODEL = 0,
    /** Divided by its L2 norm (a zero vector stays zero). */
    PAGODA_EMBEDDING_NORMALIZE_L2 = 1,
    /** As pooled. */
    PAGODA_EMBEDDING_NORMALIZE_NONE = 2
} pagoda_embedding_normalize_t;

/** \brief One entry of ::pagoda_request_options_t::logit_bias. */
typedef struct pagoda_logit_bias {
    int32_t token_id; /**< The token, in [0, vocabulary size). */
    float bias;       /**< Added to its logit; in [-100, 100] (-100 bans it in practice). */
} pagoda_logit_bias_t;

/**
 * \brief A host's logits processor: called once per sequence per step, before the token is
 * picked, with the sequence's logits row to change in place.
 *
 * It runs after `allowed_token_ids`, `bad_words`, `logit_bias` and `min_tokens` and before the
 * penalties and temperature; the log-probabilities reported stay those of the model's raw row.
 * It may set logits to -inf (never NaN or +inf, which end the request with an error).
 * \param[in] user ::pagoda_request_options_t::logits_processor_user.
 * \param[in] request_id the id submit returned.
 * \param[in] sequence_index which of the request's sequences (0 .. `best_of` - 1).
 * \param[in] token_ids the sequence's tokens so far: the prompt, then what it generated; valid
 *            during the call only.
 * \param[in] n_tokens entries of `token_ids`.
 * \param[in] n_prompt_tokens how many of them are the prompt (generated: the rest).
 * \param[in,out] logits the row, one float per vocabulary entry.
 * \param[in] n_logits entries of `logits` (the vocabulary size).
 * \return 0 to go on; anything else ends the request with ::PAGODA_FINISH_ERROR and status
 *         ::PAGODA_ERR_CANCELLED.
 * \par Thread safety
 * Called on the thread that runs pagoda_engine_step() (or pagoda_engine_step_poll()), with
 * the engine's lock held: it must not call any pagoda_engine_* function of that engine. The
 * sampler picks the token on the host for such a request (never the device's sampler).
 * \since 0.1
 */
typedef int32_t (*pagoda_logits_processor_fn)(void *user, uint64_t request_id,
                                              int32_t sequence_index, const int32_t *token_ids,
                                              size_t n_tokens, size_t n_prompt_tokens,
                                              float *logits, size_t n_logits);

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
    /** Biases added to the named tokens' logits before the penalties and temperature (OpenAI's
     *  `logit_bias`); each token once, each bias in [-100, 100]. Copied at submit. This and the
     *  fields after it are refused with beam search (`beam_width` > 0). \since 0.1 */
    const pagoda_logit_bias_t *logit_bias;
    size_t n_logit_bias;           /**< Entries of `logit_bias`. \since 0.1 */
    /** vLLM's `bad_words` as token ids: every word's ids one after another, `bad_words_lengths`
     *  saying how many each has. A word's last token is masked when the tokens generated end
     *  with the rest of the word (generated tokens only, never the prompt). Copied at submit.
     *  \since 0.1 */
    const int32_t *bad_words_token_ids;
    const size_t *bad_words_lengths; /**< Per word its token count (each >= 1). \since 0.1 */
    size_t n_bad_words;            /**< Entries of `bad_words_lengths`. \since 0.1 */
    /** Only these ids may be sampled (vLLM's `allowed_token_ids`); NULL with
     *  `n_allowed_token_ids` 0 = every id (default). Copied at submit. \since 0.1 */
    const int32_t *allowed_token_ids;
    size_t n_allowed_token_ids;    /**< Entries of `allowed_token_ids`. \since 0.1 */
    /** Called on every row this request samples (see ::pagoda_logits_processor_fn); NULL =
     *  none (default). Refused with ::PAGODA_ERR_UNSUPPORTED on a mesh over processes, where a
     *  function pointer cannot reach the other ranks. \since 0.1 */
    pagoda_logits_processor_fn logits_processor;
    /** Passed to `logits_processor`; must stay valid until the request's last output
     *  (`request_finished`). \since 0.1 */
    void *logits_processor_user;
    /** Until this many tokens are generated, the end-of-sequence tokens (unless
     *  ::PAGODA_REQUEST_IGNORE_EOS) and `stop_token_ids` are masked, and stop strings are looked
     *  for only in the text of later tokens (vLLM's `min_tokens`); at most `max_tokens`.
     *  Default 0. \since 0.1 */
    int32_t min_tokens;
    /** What `constraint` is: a ::pagoda_constraint_kind_t (constraint.h); default
     *  ::PAGODA_CONSTRAINT_NONE. Refused with beam search. \since 0.1 */
    int32_t constraint_kind;
    /** The constraint's text, NUL-terminated, copied at submit: a grammar, a regular expression
     *  or a JSON Schema's JSON (not read for ::PAGODA_CONSTRAINT_JSON_OBJECT). A text that does
     *  not compile fails the submit, naming the construct and where it is. \since 0.1 */
    const char *constraint;
    /** With ::PAGODA_REQUEST_EMBED: a ::pagoda_pooling_t; default ::PAGODA_POOLING_MODEL.
     *  Must be 0 without the flag. \since 0.1 */
    int32_t pooling;
    /** With ::PAGODA_REQUEST_EMBED: a ::pagoda_embedding_normalize_t; default
     *  ::PAGODA_EMBEDDING_NORMALIZE_MODEL. Must be 0 without the flag. \since 0.1 */
    int32_t embedding_normalize;
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
    /** An embedding request's (::PAGODA_REQUEST_EMBED) pooled vector, `n_embedding` f32, on
     *  its one output when it finished normally (`finish_reason` ::PAGODA_FINISH_STOP_TOKEN,
     *  as vLLM's "stop" for pooling requests); NULL otherwise. Valid until the next poll.
     *  \since 0.1 */
    const float *embedding;
    size_t n_embedding;                  /**< Entries of `embedding`: the hidden size. \since 0.1 */
} pagoda_output_t;

/** \brief Called with each output once pagoda_engine_step() (or pagoda_engine_abort()) has
 *  produced it, on that call's thread, outside the engine's lock: it may submit and abort.
 *  The output is valid during the call only. When set, outputs are not queued for polling. */
typedef void (*pagoda_output_fn)(void *user, const pagoda_output_t *output);

/**
 * \brief Fills the first `size` bytes of `options` with the defaults: temperature 1, 256
 * tokens, n = 1, no penalties, seed 0 (without ::PAGODA_REQUEST_FRESH_SEED: deterministic), no
 * logit controls and no processor.
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

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_REQUEST_H */
