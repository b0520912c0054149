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

// BERT's text cleaning (Hugging Face's BertNormalizer), step by step in its order: NUL, U+FFFD
// and control characters dropped and whitespace made ' ' (clean_text); spaces put around CJK
// ideographs (handle_chinese_chars); accents stripped (NFD, then nonspacing marks removed);
// lowercased one character at a time (no final-sigma rule, as Rust's char::to_lowercase).
class BertNormalizer final : public Normalizer {
public:
    BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
        : clean_text_(clean_text), handle_chinese_chars_(handle_chinese_chars), strip_accents_(strip_accents),
          lowercase_(lowercase) {}
    void normalize(std::string &text) const override;

private:
    bool clean_text_, handle_chinese_chars_, strip_accents_, lowercase_;
};

// Removes nonspacing marks (ALBERT's tokenizer runs it after NFKD).
class StripAccentsNormalizer final : public Normalizer {
public:
    void normalize(std::string &text) const override;
};

// Removes whitespace from the start and/or the end.
class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string &text) const override;

private:
    bool left_, right_;
};

}  // namespace pagoda::tok
