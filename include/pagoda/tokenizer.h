/**
 * \file tokenizer.h
 * \brief Tokenizers: text to token ids and back, from a `tokenizer.json` or a model's vocabulary.
 */
#ifndef PAGODA_TOKENIZER_H
#define PAGODA_TOKENIZER_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup tokenizer Tokenizers
 * \brief Byte-level BPE (GPT-2, Llama 3, Qwen2), SentencePiece-style BPE (Llama 2, Mistral),
 *        Unigram (T5, ALBERT style) and WordPiece (BERT) as Hugging Face's `tokenizer.json`
 *        describes them, and the `llama` and `gpt2` vocabularies GGUF files carry.
 *
 * A tokenizer is immutable once opened: every function here is safe from any thread.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief pagoda_tokenizer_encode() flag: add the BOS/EOS or template tokens the tokenizer's post-processor adds. */
#define PAGODA_TOKENIZE_ADD_SPECIAL 1u
/**
 * \brief pagoda_tokenizer_encode() flag: text that spells a special token (`<|eot_id|>`) becomes
 *        that token.
 *
 * Without it, special tokens (a tokenizer.json's added tokens marked `special`, a GGUF file's
 * control tokens) are encoded as plain text, which is what untrusted user text needs; added tokens
 * that are not special are always recognized. Hugging Face's `encode(text)` parses special tokens:
 * ::PAGODA_TOKENIZE_ADD_SPECIAL | ::PAGODA_TOKENIZE_PARSE_SPECIAL gives the ids it gives.
 */
#define PAGODA_TOKENIZE_PARSE_SPECIAL 2u

/**
 * \brief pagoda_tokenizer_decode() flag: leave special tokens (BOS, EOS, control tokens) out of the
 *        text. Without it they appear as they are spelled (`<s>`), as in Hugging Face's decode.
 */
#define PAGODA_DETOKENIZE_SKIP_SPECIAL 1u

/** \brief What a tokenizer is; filled by pagoda_tokenizer_get_info(). */
typedef struct pagoda_tokenizer_info {
    uint32_t struct_size;  /**< Set by the caller to sizeof(pagoda_tokenizer_info_t). */
    int32_t vocab_size;    /**< Ids are in [0, vocab_size), added tokens included. */
    int32_t bos_token_id;  /**< Beginning of sequence; -1 when there is none. */
    int32_t eos_token_id;  /**< End of sequence (the first, when there are several); -1 when none. */
    int32_t unk_token_id;  /**< Unknown token; -1 when none. */
    int32_t pad_token_id;  /**< Padding; -1 when none. */
    char model[16];        /**< `"bpe"` (byte-level BPE), `"spm"` (SentencePiece-style BPE), `"unigram"` or
                                `"wordpiece"`, NUL-terminated. */
} pagoda_tokenizer_info_t;

/**
 * \brief Opens a Hugging Face tokenizer: a `tokenizer.json` file, or a folder holding one
 *        (then its `tokenizer_config.json` is read too, for the BOS/EOS choice).
 * \param[in] path the file or folder.
 * \param[out] out the tokenizer; release with pagoda_tokenizer_destroy().
 * \return ::PAGODA_OK; ::PAGODA_ERR_NOT_FOUND when there is no such file; ::PAGODA_ERR_FORMAT
 *         for malformed JSON or a missing field (the message names it); ::PAGODA_ERR_UNSUPPORTED
 *         for a model type, normalizer, pre-tokenizer or decoder this build does not implement.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_open(const char *path, pagoda_tokenizer_t **out);

/**
 * \brief The tokenizer a model carries (its GGUF vocabulary, or its folder's `tokenizer.json`).
 * \param[in] model an open model.
 * \param[out] out a new handle; release with pagoda_tokenizer_destroy(). It stays valid after
 *             the model is destroyed.
 * \return ::PAGODA_OK; ::PAGODA_ERR_NOT_FOUND when the model has no tokenizer.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_from_model(const pagoda_model_t *model,
                                                       pagoda_tokenizer_t **out);

/**
 * \brief Releases a tokenizer.
 * \param[in] tokenizer the handle, or NULL.
 * \par Thread safety
 * Not while another call on this handle runs; the model it came from is not affected.
 * \since 0.1
 */
PAGODA_API void pagoda_tokenizer_destroy(pagoda_tokenizer_t *tokenizer);

/**
 * \brief Describes a tokenizer.
 * \param[in] tokenizer the handle.
 * \param[in,out] info `struct_size` set by the caller; the rest is filled (the first
 *                `struct_size` bytes only, for callers built against an older, smaller struct).
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT when `info` is
 *         NULL.
 * \par Thread safety
 * Safe from any thread (a tokenizer never changes after opening).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_get_info(const pagoda_tokenizer_t *tokenizer,
                                                 pagoda_tokenizer_info_t *info);

/**
 * \brief Text to token ids.
 * \param[in] tokenizer the handle.
 * \param[in] text UTF-8 text (invalid sequences are encoded as their bytes where the model has
 *            byte tokens, else as the unknown token).
 * \param[in] text_len bytes of `text`.
 * \param[in] flags PAGODA_TOKENIZE_* bits.
 * \param[out] ids the ids; release with pagoda_free(). NULL when `*n_ids` is 0.
 * \param[out] n_ids how many.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for NULL
 *         pointers or unknown flags.
 * \par Thread safety
 * Safe from any thread, also on the same tokenizer at once.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_encode(const pagoda_tokenizer_t *tokenizer,
                                                   const char *text, size_t text_len,
                                                   uint32_t flags, int32_t **ids, size_t *n_ids);

/**
 * \brief Token ids to text, as Hugging Face's `decode` gives it.
 * \param[in] tokenizer the handle.
 * \param[in] ids the ids.
 * \param[in] n_ids how many.
 * \param[in] flags PAGODA_DETOKENIZE_* bits.
 * \param[out] text NUL-terminated UTF-8 (bytes that do not form valid UTF-8 become U+FFFD);
 *             release with pagoda_free(). Hugging Face's `clean_up_tokenization_spaces` is not
 *             applied (it edits text, such as " ." to ".", that the model produced).
 * \param[out] text_len bytes of `text` before the NUL; may be NULL.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for an id
 *         outside the vocabulary.
 * \par Thread safety
 * Safe from any thread, also on the same tokenizer at once.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_decode(const pagoda_tokenizer_t *tokenizer,
                                                   const int32_t *ids, size_t n_ids,
                                                   uint32_t flags, char **text, size_t *text_len);

/**
 * \brief The bytes one token stands for (a byte token gives its byte; SentencePiece's `▁`
 *        becomes a space; byte-level BPE's symbols become their bytes; a WordPiece token loses
 *        its `##` continuation prefix, and a word-initial one gets no space).
 * \param[in] tokenizer the handle.
 * \param[in] id the token.
 * \param[out] buffer where to write; may be NULL when `capacity` is 0.
 * \param[in] capacity bytes available in `buffer`.
 * \param[out] length bytes the piece has (it is written only when it fits).
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for an id
 *         outside the vocabulary or a buffer too small (`*length` then says what is needed).
 * \par Thread safety
 * Safe from any thread, also on the same tokenizer at once.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_token_to_piece(const pagoda_tokenizer_t *tokenizer,
                                                           int32_t id, char *buffer,
                                                           size_t capacity, size_t *length);

/**
 * \brief How pagoda_tokenizer_apply_chat_template() renders. Initialise with
 *        pagoda_chat_template_options_default().
 */
typedef struct pagoda_chat_template_options {
    uint32_t struct_size;          /**< Set by pagoda_chat_template_options_init(). */
    int32_t add_generation_prompt; /**< Nonzero: end with the header of the assistant's turn (default 0). */
    const char *chat_template;     /**< Jinja source to render instead of the tokenizer's own; NULL (default): the tokenizer's. */
    const char *template_name;     /**< Which of the tokenizer's named templates (`"tool_use"`, `"rag"`); NULL (default):
                                        `"tool_use"` when `tools_json` is given and the tokenizer has one, else `"default"`. */
    const char *tools_json;        /**< The template's `tools`: a JSON array of tool schemas; NULL (default): `None`. */
    const char *context_json;      /**< More template variables as a JSON object (`{"enable_thinking": false}`,
                                        `{"documents": [...]}`); they override the others. NULL (default): none. */
} pagoda_chat_template_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults (all zero and NULL).
 *
 * Call it as pagoda_chat_template_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API void pagoda_chat_template_options_init(pagoda_chat_template_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_chat_template_options_init() with the caller's struct size. */
#define pagoda_chat_template_options_default(options) \
    pagoda_chat_template_options_init((options), sizeof *(options))

/**
 * \brief Renders a conversation into prompt text with the tokenizer's chat template, exactly as
 *        Hugging Face transformers' `apply_chat_template(messages, tokenize=False)` does.
 *
 * The template is `tokenizer_config.json`'s `chat_template` (a folder's tokenizer) or the GGUF
 * file's `tokenizer.chat_template` (a model's tokenizer), parsed on first use. It runs as jinja2
 * runs it in transformers (`trim_blocks`, `lstrip_blocks`, `break`/`continue`, `raise_exception()`,
 * `strftime_now()` in local time, `tojson` as `json.dumps(ensure_ascii=False)`, Python's semantics)
 * with the variables `messages`, `tools`, `documents` (None), `add_generation_prompt`, the
 * tokenizer's special tokens (`bos_token`, `eos_token`, ...: those it has) and `context_json`'s.
 * Templates may use the Jinja most chat templates use; a construct outside it (a filter such as
 * `xmlattr`, a tag such as `include`) fails with ::PAGODA_ERR_UNSUPPORTED naming it and its line.
 * The text is not tokenized: encode it without ::PAGODA_TOKENIZE_ADD_SPECIAL when the template
 * writes the BOS token itself.
 * \param[in] tokenizer the handle.
 * \param[in] messages_json an OpenAI-style JSON array of messages: objects with a string `role`
 *            and a `content` that is a string, an array of content parts, or null; other members
 *            (`tool_calls`, `tool_call_id`, `name`, `reasoning_content`) reach the template as
 *            they are.
 * \param[in] options NULL for the defaults, or initialised with pagoda_chat_template_options_default().
 * \param[out] text the rendered text, NUL-terminated UTF-8; release with pagoda_free().
 * \param[out] text_len bytes of `text` before the NUL; may be NULL.
 * \return ::PAGODA_OK;
 *   ::PAGODA_ERR_INVALID_HANDLE;
 *   ::PAGODA_ERR_INVALID_ARGUMENT for NULL pointers, `messages_json`/`tools_json`/`context_json`
 *   that are not JSON of the right shape (the message names the member at fault), when the
 *   template calls `raise_exception(msg)` (the message ends with the template's `msg`, after
 *   "chat template raised an exception at line N: "; a server answers HTTP 400 with it), or when rendering
 *   fails on these messages as it would in Python (a type error such as adding a string and a
 *   list, an undefined value used, a render past 64 MiB);
 *   ::PAGODA_ERR_FORMAT for a malformed template;
 *   ::PAGODA_ERR_UNSUPPORTED when the tokenizer has no chat template (and none is given) or the
 *   template uses Jinja outside the supported subset.
 * \par Thread safety
 * Safe from any thread, also on the same tokenizer at once.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_tokenizer_apply_chat_template(const pagoda_tokenizer_t *tokenizer,
                                                                const char *messages_json,
                                                                const pagoda_chat_template_options_t *options,
                                                                char **text, size_t *text_len);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_TOKENIZER_H */
