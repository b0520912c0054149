// The tokenizer contract the rest of the core uses. Implementations: Hugging Face tokenizer.json
// (byte-level BPE, SentencePiece-style BPE, Unigram, WordPiece) and GGUF vocabularies (llama, gpt2).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {
struct GgufVocabulary;
}

namespace pagoda::tok {

class ChatTemplateSet;

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // A tokenizer.json file, or a folder holding tokenizer.json (and tokenizer_config.json).
    // Throws Error: NOT_FOUND, FORMAT (naming the field), UNSUPPORTED (naming the component).
    static std::shared_ptr<const Tokenizer> from_file(const std::string &path);
    // tokenizer.json's text (and tokenizer_config.json's, or NULL); the paths name them in
    // messages. What from_file runs once it has read the files.
    static std::shared_ptr<const Tokenizer> from_json_text(std::string_view tokenizer_json,
                                                           const std::string &json_path,
                                                           const std::string *config_json,
                                                           const std::string &config_path);
    // The vocabulary a GGUF file carries; `source` names the file in messages.
    static std::shared_ptr<const Tokenizer> from_gguf(const GgufVocabulary &vocabulary,
                                                      const std::string &source);

    // flags: PAGODA_TOKENIZE_* (tokenizer.h).
    virtual std::vector<int32_t> encode(std::string_view text, uint32_t flags) const = 0;
    // flags: PAGODA_DETOKENIZE_*. Throws INVALID_ARGUMENT for an id outside the vocabulary.
    // Invalid UTF-8 in the result becomes U+FFFD, as Hugging Face's decode does.
    virtual std::string decode(std::span<const int32_t> ids, uint32_t flags) const = 0;
    // The raw bytes of one token (may be part of a UTF-8 sequence).
    virtual std::string token_to_piece(int32_t id) const = 0;
    // Control and added special tokens.
    virtual bool is_special(int32_t id) const = 0;
    // A byte-fallback token ("<0xNN>"): how a run of them decodes is known only once the run
    // ends (an invalid run becomes one U+FFFD per byte), so the Detokenizer waits for its end.
    virtual bool is_byte_fallback(int32_t id) const { return false; }

    // Whether `id` names a token. A model's embedding may have more rows than its tokenizer has
    // tokens (Qwen pads 151669 tokens to 151936 rows); the ids between name none.
    virtual bool has_token(int32_t id) const = 0;
    virtual int32_t vocab_size() const = 0;
    virtual int32_t bos_token_id() const = 0;  // -1 = none
    virtual int32_t eos_token_id() const = 0;  // -1 = none
    virtual int32_t unk_token_id() const = 0;  // -1 = none
    virtual int32_t pad_token_id() const = 0;  // -1 = none
    // "bpe" (byte-level BPE), "spm" (SentencePiece-style BPE), "unigram" or "wordpiece".
    virtual const char *model_name() const = 0;

    // The chat templates the tokenizer's files carry (tokenizer_config.json's chat_template, a
    // GGUF file's tokenizer.chat_template), with the special tokens a template sees; null, or a set
    // without sources, when there are none. Set once by whoever builds the tokenizer, before it is shared.
    const std::shared_ptr<const ChatTemplateSet> &chat_templates() const { return chat_templates_; }
    void set_chat_templates(std::shared_ptr<const ChatTemplateSet> templates) {
        chat_templates_ = std::move(templates);
    }

private:
    std::shared_ptr<const ChatTemplateSet> chat_templates_;
};

// Turns generated ids into text as they arrive: emits only complete UTF-8, and the same text in
// the end as decode() of all ids (SentencePiece's leading space included or dropped as decode
// does). `prompt` gives the context the first generated token decodes after.
class Detokenizer {
public:
    Detokenizer(std::shared_ptr<const Tokenizer> tokenizer, std::span<const int32_t> prompt,
                uint32_t flags);
    ~Detokenizer();
    Detokenizer(Detokenizer &&) noexcept;
    Detokenizer &operator=(Detokenizer &&) noexcept;
    // A copy continues from the same point on its own (a beam forked from another).
    Detokenizer(const Detokenizer &other);
    Detokenizer &operator=(const Detokenizer &other);

    // The text that `id` completes; "" while a UTF-8 sequence is still open, and for an id
    // that names no token (a padding row of the model's vocabulary), which adds no text, as
    // Hugging Face's decode skips such ids.
    std::string push(int32_t id);
    // Whatever is held back at the end (an unfinished sequence, as U+FFFD).
    std::string flush();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace pagoda::tok
