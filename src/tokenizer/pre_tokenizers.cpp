#include "tokenizer/pre_tokenizers.hpp"

#include "tokenizer/byte_level.hpp"
#include "tokenizer/unicode_classes.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

const char *const kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char *const kLlama3SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

struct Segment {
    size_t begin, end;
    bool is_match;
};

// The rules follow Hugging Face's SplitDelimiterBehavior: a match merges into a neighbour only
// when that neighbour is not a match itself.
std::vector<Segment> apply_behavior(const std::vector<Segment> &segments, SplitBehavior behavior) {
    std::vector<Segment> out;
    out.reserve(segments.size());
    bool previous_match = false;
    switch (behavior) {
    case SplitBehavior::Isolated: return segments;
    case SplitBehavior::Removed:
        for (const Segment &s : segments)
            if (!s.is_match) out.push_back(s);
        return out;
    case SplitBehavior::MergedWithPrevious:
        for (const Segment &s : segments) {
            if (s.is_match && !previous_match && !out.empty()) out.back().end = s.end;
            else out.push_back(s);
            previous_match = s.is_match;
        }
        return out;
    case SplitBehavior::MergedWithNext:
        for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
            if (it->is_match && !previous_match && !out.empty()) out.back().begin = it->begin;
            else out.push_back(*it);
            previous_match = it->is_match;
        }
        return {out.rbegin(), out.rend()};
    case SplitBehavior::Contiguous:
        for (const Segment &s : segments) {
            if (s.is_match == previous_match && !out.empty()) out.back().end = s.end;
            else out.push_back(s);
            previous_match = s.is_match;
        }
        return out;
    }
    return out;
}

// Each character for which `is_match` holds is a match of its own (Hugging Face's split by a
// character predicate), then `behavior` decides what becomes of the matches.
template <class Predicate>
void split_characters(const std::string &piece, Predicate is_match, SplitBehavior behavior,
                      std::vector<std::string> &out) {
    std::vector<Segment> segments;
    size_t done = 0;
    for (size_t pos = 0; pos < piece.size();) {
        const size_t n = utf8_sequence_length(piece, pos);
        if (n > 0 && is_match(utf8_decode_at(piece, pos))) {
            if (pos > done) segments.push_back({done, pos, false});
            segments.push_back({pos, pos + n, true});
            done = pos + n;
        }
        pos += n == 0 ? 1 : n;
    }
    if (done < piece.size()) segments.push_back({done, piece.size(), false});
    for (const Segment &s : apply_behavior(segments, behavior))
        if (s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
}

}  // namespace

void SplitPreTokenizer::split(const std::string &piece, std::vector<std::string> &out) const {
    std::vector<Segment> segments;
    size_t done = 0;
    for (const Span &m : pattern_.find_all(piece)) {
        if (m.begin > done) segments.push_back({done, m.begin, invert_});
        segments.push_back({m.begin, m.end, !invert_});
        done = m.end;
    }
    if (done < piece.size()) segments.push_back({done, piece.size(), invert_});
    for (const Segment &s : apply_behavior(segments, behavior_))
        if (s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
}

void SplitPreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool) const {
    std::vector<std::string> out;
    out.reserve(pieces.size() * 2);
    for (const std::string &piece : pieces) split(piece, out);
    pieces = std::move(out);
}

void SequencePreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const {
    for (const auto &step : steps_) step->pre_tokenize(pieces, at_text_start);
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space) {
    if (use_regex)
        gpt2_split_ = std::make_unique<SplitPreTokenizer>(
            TextPattern::regex(kGpt2SplitRegex, "ByteLevel pre-tokenizer"), SplitBehavior::Isolated,
            false);
}

void ByteLevelPreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool) const {
    std::vector<std::string> split;
    split.reserve(pieces.size());
    for (std::string &piece : pieces) {
        if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
        if (gpt2_split_) gpt2_split_->split(piece, split);
        else split.push_back(std::move(piece));
    }
    for (std::string &piece : split) piece = to_byte_level(piece);
    pieces = std::move(split);
}

MetaspacePreTokenizer::MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
    : replacement_(std::move(replacement)), prepend_(prepend) {
    if (split)
        splitter_ = std::make_unique<SplitPreTokenizer>(TextPattern::literal(replacement_),
                                                        SplitBehavior::MergedWithNext, false);
}

void MetaspacePreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const {
    const TextPattern space = TextPattern::literal(" ");
    std::vector<std::string> out;
    for (size_t i = 0; i < pieces.size(); ++i) {
        std::string piece = space.replace_all(pieces[i], replacement_);
        const bool prepend = prepend_ == Prepend::Always || (prepend_ == Prepend::First && i == 0 && at_text_start);
        if (prepend && piece.compare(0, replacement_.size(), replacement_) != 0)
            piece.insert(0, replacement_);
        if (splitter_) splitter_->split(piece, out);
        else out.push_back(std::move(piece));
    }
    pieces = std::move(out);
}

DigitsPreTokenizer::DigitsPreTokenizer(bool individual_digits)
    : split_(TextPattern::regex(individual_digits ? "[0-9]" : "[0-9]+", "Digits pre-tokenizer"),
             SplitBehavior::Isolated, false) {}

void DigitsPreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool at_text_start) const {
    split_.pre_tokenize(pieces, at_text_start);
}

void BertPreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool) const {
    std::vector<std::string> words, out;
    for (const std::string &piece : pieces) split_characters(piece, is_bert_whitespace, SplitBehavior::Removed, words);
    out.reserve(words.size());
    for (const std::string &word : words) split_characters(word, is_bert_punctuation, SplitBehavior::Isolated, out);
    pieces = std::move(out);
}

void PunctuationPreTokenizer::pre_tokenize(std::vector<std::string> &pieces, bool) const {
    std::vector<std::string> out;
    out.reserve(pieces.size());
    for (const std::string &piece : pieces) split_characters(piece, is_bert_punctuation, behavior_, out);
    pieces = std::move(out);
}

}  // namespace pagoda::tok
