/**
 * \file quantize.h
 * \brief Quantizing a GGUF model or a Hugging Face folder into GGUF: what `pagoda quantize` runs.
 */
#ifndef PAGODA_QUANTIZE_H
#define PAGODA_QUANTIZE_H

#include "pagoda/common.h"
#include "pagoda/model.h"
#include "pagoda/status.h"

/**
 * \defgroup quantize Quantizing
 * \brief Writes a model's weight matrices in one of GGUF's quantized block types to a GGUF
 *        file: from a GGUF file (the rest of it, metadata, vocabulary, norms, carried over), or
 *        from a Hugging Face folder converted on the way as llama.cpp's `convert_hf_to_gguf.py`
 *        converts it. The blocks follow ggml's layouts and the type ids are ggml's, so any GGUF
 *        reader loads the result; which tensor gets which type follows llama.cpp's recipes of the
 *        same names.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief What pagoda_model_quantize() writes, by llama.cpp's names for the same mixes. */
typedef enum pagoda_quant_type {
    PAGODA_QUANT_Q8_0 = 0,   /**< Q8_0 for every weight matrix. */
    PAGODA_QUANT_Q4_0 = 1,   /**< Q4_0, with Q6_K for the output matrix. */
    PAGODA_QUANT_Q4_K_M = 2, /**< Q4_K, with Q6_K for the output matrix and for attn_v and
                                  ffn_down in the first and last eighth of the layers and every
                                  third layer between. */
    PAGODA_QUANT_Q5_K_M = 3, /**< Q5_K, with Q6_K where Q4_K_M has it. */
    PAGODA_QUANT_Q6_K = 4    /**< Q6_K for every weight matrix. */
} pagoda_quant_type_t;

/** \brief How to quantize. Initialise with pagoda_quantize_options_default(). */
typedef struct pagoda_quantize_options {
    uint32_t struct_size;        /**< sizeof(pagoda_quantize_options_t) as the caller knows it. */
    int32_t type;                /**< A ::pagoda_quant_type_t; default ::PAGODA_QUANT_Q4_K_M. */
    int32_t threads;             /**< Threads quantizing; 0 (default) for one per core. */
    pagoda_progress_fn progress; /**< Progress callback (the stage names the tensor), or NULL.
                                      Runs on the calling thread; returning 0 cancels. */
    void *progress_user;         /**< Passed to `progress`. */
} pagoda_quantize_options_t;

/** \brief The most tensor types one quantization writes (see pagoda_quantize_stats_t). */
#define PAGODA_QUANTIZE_MAX_TYPES 8

/** \brief What one tensor type received. */
typedef struct pagoda_quantized_type_stats {
    int32_t ggml_type;    /**< ggml's type id: 2 Q4_0, 8 Q8_0, 12 Q4_K, 13 Q5_K, 14 Q6_K. */
    char name[8];         /**< `"Q4_K"`, NUL-terminated. */
    int64_t tensors;      /**< Tensors written in this type. */
    uint64_t values;      /**< Values in them. */
    double rmse;          /**< Root mean squared error of the values as written. */
    double relative_rmse; /**< `rmse` over the root mean square of the source's values. */
} pagoda_quantized_type_stats_t;

/** \brief What a quantization did; filled by pagoda_model_quantize(). */
typedef struct pagoda_quantize_stats {
    uint32_t struct_size;  /**< Set by the caller to sizeof(pagoda_quantize_stats_t). */
    uint64_t input_bytes;  /**< Tensor data read. */
    uint64_t output_bytes; /**< Size of the file written. */
    int64_t tensors_kept;  /**< Tensors copied as they were (norms, biases, rows no block fits). */
    int32_t n_types;       /**< Entries of `types` filled. */
    pagoda_quantized_type_stats_t types[PAGODA_QUANTIZE_MAX_TYPES]; /**< By ggml type id. */
} pagoda_quantize_stats_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults (Q4_K_M, one thread per
 *        core, no progress callback).
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_quantize_options_init(pagoda_quantize_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_quantize_options_init() with the caller's struct size. */
#define pagoda_quantize_options_default(options) pagoda_quantize_options_init((options), sizeof *(options))

/**
 * \brief Writes `output_path`, the model at `input_path` as GGUF with its weight matrices
 *        quantized.
 *
 * A Hugging Face folder (`config.json`, `model.safetensors` or shards with
 * `model.safetensors.index.json`, `tokenizer.json`, `tokenizer_config.json`, optionally
 * `generation_config.json`) of a model pagoda_model_open() reads from such a folder (a
 * mixture of experts aside, refused with ::PAGODA_ERR_UNSUPPORTED: quantize its GGUF) is converted
 * as llama.cpp's converter does: `general.architecture` "llama" (Mistral too) or the
 * architecture's own ("qwen2", "qwen3", "gemma2", "gemma3", "phi3"), the `<arch>.*` keys from
 * `config.json`, tensors under GGUF's names (Llama's Q/K rows permuted for interleaved RoPE;
 * norms and biases in F32, Gemma's norms as 1 + w; Llama 3 RoPE scaling as `rope_freqs.weight`,
 * Phi-3's LongRoPE as `rope_factors_long`/`_short.weight`; no `output.weight` for tied
 * embeddings), and the tokenizer as
 * `tokenizer.ggml.*`: "llama" for SentencePiece-style BPE (scores from the merges' ranks),
 * "gpt2" for byte-level BPE with `tokenizer.ggml.pre` "llama-bpe", "qwen2" or "gpt2", the chat
 * template of `tokenizer_config.json`. A tokenizer GGUF cannot carry faithfully is refused
 * (before anything is written), as is one whose sample texts encode differently once converted;
 * a Qwen2-style NFC normalizer is dropped, as llama.cpp drops it, with a warning.
 * \param[in] input_path a GGUF file whose weights are F32, F16 or BF16, or a Hugging Face
 *            folder as above.
 * \param[in] output_path the file to write; it appears whole or not at all (written beside it
 *            as `output_path` + `".partial"`, then renamed).
 * \param[in] options NULL for the defaults.
 * \param[out] stats what was written, per type; NULL when not wanted.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT (a NULL path, an unknown type, negative
 *         threads, an unset `stats->struct_size`); the input's ::PAGODA_ERR_NOT_FOUND,
 *         ::PAGODA_ERR_FORMAT or ::PAGODA_ERR_UNSUPPORTED, the message naming the file and the
 *         field (also for weights already quantized, another architecture, a folder without
 *         `tokenizer.json` or weights, a tokenizer GGUF cannot carry); ::PAGODA_ERR_IO naming the
 *         output; ::PAGODA_ERR_CANCELLED (the callback asked).
 * \par Thread safety
 * Safe from any thread; the progress callback runs on the calling thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_model_quantize(const char *input_path, const char *output_path,
                                                 const pagoda_quantize_options_t *options,
                                                 pagoda_quantize_stats_t *stats);

#ifdef __cplusplus
}
#endif

/** @} */

#endif
