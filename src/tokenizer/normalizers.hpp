// Normalizers: the first step of a Hugging Face tokenizer, rewriting the text of each stretch
// between added tokens before it is split.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/text_pattern.hpp"

namespace pagoda::tok {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string &text) const = 0;
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
        : steps_(std::move(steps)) {}
    void normalize(std::string &text) const override;

private:
    std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Puts `prefix` in front of non-empty text (Llama 2's "▁").
class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
    void normalize(std::string &text) const override;

private:
    std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(TextPattern pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    void normalize(std::string &text) const override;

private:
    TextPattern pattern_;
    std::string content_;
};

// Unicode normalization forms and lowercasing, done by ICU.
class UnicodeNormalizer final : public Normalizer {
public:
    enum class Form { NFC, NFD, NFKC, NFKD, Lowercase };
    explicit UnicodeNormalizer(Form form) : form_(form) {}
    void normalize(std::string &text) const override;

private:
    Form form_;
};

}  // namespace pagoda::tok
