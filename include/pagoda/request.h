/**
 * \file request.h
 * \brief Requests: what one asks of the engine (sampling, stopping, logprobs, n and beams) and the
 *        outputs it produces.
 */
#ifndef PAGODA_REQUEST_H
#define PAGODA_REQUEST_H

#include "pagoda/common.h"

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

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_REQUEST_H */
