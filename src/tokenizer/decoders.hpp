// Decoders: turn the tokens of a decode back into text, each step rewriting the list of token
// strings (Hugging Face's decode_chain); the text is the concatenation at the end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/text_pattern.hpp"

namespace pagoda::tok {

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decode_chain(std::vector<std::string> &tokens) const = 0;
};

class SequenceDecoder final : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
    void decode_chain(std::vector<std::string> &tokens) const override;

private:
    std::vector<std::unique_ptr<Decoder>> steps_;
};

// Byte-level symbols back to bytes, all tokens into one lossy UTF-8 string.
class ByteLevelDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string> &tokens) const override;
};

class ReplaceDecoder final : public Decoder {
public:
    ReplaceDecoder(TextPattern pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string> &tokens) const override;

private:
    TextPattern pattern_;
    std::string content_;
};

// "<0xNN>" tokens to their bytes: a run of them that forms valid UTF-8 becomes that text, else
// one U+FFFD per byte (as Hugging Face does).
class ByteFallbackDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string> &tokens) const override;
};

// All tokens into one.
class FuseDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string> &tokens) const override;
};

// Removes up to `start` leading and `stop` trailing copies of `content` from each token.
class StripDecoder final : public Decoder {
public:
    StripDecoder(std::string content, size_t start, size_t stop)
        : content_(std::move(content)), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string> &tokens) const override;

private:
    std::string content_;
    size_t start_, stop_;
};

// "▁" back to spaces, dropping the space the pre-tokenizer put in front of the first token.
class MetaspaceDecoder final : public Decoder {
public:
    MetaspaceDecoder(std::string replacement, bool strip_first_space)
        : replacement_(std::move(replacement)), strip_first_space_(strip_first_space) {}
    void decode_chain(std::vector<std::string> &tokens) const override;

private:
    std::string replacement_;
    bool strip_first_space_;
};

// WordPiece's: tokens after the first lose the continuing-subword prefix ("##ing" joins its
// word) or get a space in front; with `cleanup`, each token then has the spaces before
// punctuation and English contractions taken out (" ." to ".", " n't" to "n't").
class WordPieceDecoder final : public Decoder {
public:
    WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string> &tokens) const override;

private:
    std::string prefix_;
    bool cleanup_;
};

// The byte a "<0xNN>" token stands for; -1 for any other token.
int byte_fallback_value(const std::string &token);

}  // namespace pagoda::tok
