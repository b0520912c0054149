// Pre-tokenizers: split normalized text into the pieces BPE encodes one at a time (words, digit
// runs, ...), and rewrite them (byte-level symbols, SentencePiece's "▁").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/text_pattern.hpp"

namespace pagoda::tok {

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces `pieces` by their splits. `at_text_start`: the first piece begins the input (not
    // the stretch after an added token), which Metaspace's "first" prepend scheme asks about.
    virtual void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const = 0;
};

// What Split does with the matches it finds (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(TextPattern pattern, SplitBehavior behavior, bool invert)
        : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;
    // One piece's splits, appended to `out`.
    void split(const std::string &piece, std::vector<std::string> &out) const;

private:
    TextPattern pattern_;
    SplitBehavior behavior_;
    bool invert_;
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
        : steps_(std::move(steps)) {}
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;

private:
    std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// GPT-2's: optionally a leading space and the GPT-2 split regex, then bytes to symbols.
class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;

private:
    bool add_prefix_space_;
    std::unique_ptr<SplitPreTokenizer> gpt2_split_;  // null without use_regex
};

// SentencePiece's: spaces become `replacement` ("▁"), one is put in front per the prepend
// scheme, and with `split` each "▁" starts a new piece.
class MetaspacePreTokenizer final : public PreTokenizer {
public:
    enum class Prepend { Always, First, Never };
    MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split);
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;

private:
    std::string replacement_;
    Prepend prepend_;
    std::unique_ptr<SplitPreTokenizer> splitter_;  // null without split
};

// ASCII digits apart from the rest: each on its own, or as runs.
class DigitsPreTokenizer final : public PreTokenizer {
public:
    explicit DigitsPreTokenizer(bool individual_digits);
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;

private:
    SplitPreTokenizer split_;
};

// BERT's: split at whitespace (dropped), then each punctuation character (ASCII punctuation and
// symbols, Unicode P*) apart.
class BertPreTokenizer final : public PreTokenizer {
public:
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;
};

// Punctuation characters (as BertPreTokenizer's) split off with `behavior`.
class PunctuationPreTokenizer final : public PreTokenizer {
public:
    explicit PunctuationPreTokenizer(SplitBehavior behavior) : behavior_(behavior) {}
    void pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const override;

private:
    SplitBehavior behavior_;
};

// The split regexes models are trained with.
extern const char *const kGpt2SplitRegex;
extern const char *const kLlama3SplitRegex;
extern const char *const kQwen2SplitRegex;

}  // namespace pagoda::tok
