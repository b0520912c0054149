#include "tokenizer/decoders.hpp"

#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

int byte_fallback_value(const std::string &token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(token[3]), lo = hex(token[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void SequenceDecoder::decode_chain(std::vector<std::string> &tokens) const {
    for (const auto &step : steps_) step->decode_chain(tokens);
}

void ByteLevelDecoder::decode_chain(std::vector<std::string> &tokens) const {
    std::string bytes;
    for (const std::string &token : tokens) {
        // A token with a code point outside the alphabet is taken as it is written.
        if (auto b = from_byte_level(token)) bytes += *b;
        else bytes += token;
    }
    tokens.assign(1, utf8_lossy(bytes));
}

void ReplaceDecoder::decode_chain(std::vector<std::string> &tokens) const {
    for (std::string &token : tokens) token = pattern_.replace_all(token, content_);
}

void ByteFallbackDecoder::decode_chain(std::vector<std::string> &tokens) const {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;  // bytes of the byte tokens seen since the last other token
    size_t run_tokens = 0;
    auto end_run = [&] {
        if (run_tokens == 0) return;
        if (is_valid_utf8(run)) {
            out.push_back(run);
        } else {
            for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(kReplacementCharacter);
        }
        run.clear();
        run_tokens = 0;
    };
    for (std::string &token : tokens) {
        const int byte = byte_fallback_value(token);
        if (byte >= 0) {
            run += char(byte);
            ++run_tokens;
        } else {
            end_run();
            out.push_back(std::move(token));
        }
    }
    end_run();
    tokens = std::move(out);
}

void FuseDecoder::decode_chain(std::vector<std::string> &tokens) const {
    std::string all;
    for (const std::string &token : tokens) all += token;
    tokens.assign(1, std::move(all));
}

void StripDecoder::decode_chain(std::vector<std::string> &tokens) const {
    if (content_.empty()) return;
    for (std::string &token : tokens) {
        size_t begin = 0, end = token.size();
        for (size_t i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0; ++i)
            begin += content_.size();
        for (size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                           token.compare(end - content_.size(), content_.size(), content_) == 0;
             ++i)
            end -= content_.size();
        token = token.substr(begin, end - begin);
    }
}

void MetaspaceDecoder::decode_chain(std::vector<std::string> &tokens) const {
    const TextPattern metaspace = TextPattern::literal(replacement_);
    for (size_t i = 0; i < tokens.size(); ++i) {
        std::string text = metaspace.replace_all(tokens[i], " ");
        if (i == 0 && strip_first_space_ && !text.empty() && text[0] == ' ') text.erase(0, 1);
        tokens[i] = std::move(text);
    }
}

void WordPieceDecoder::decode_chain(std::vector<std::string> &tokens) const {
    // Hugging Face's decoders::wordpiece::cleanup, replacement by replacement in its order.
    static const std::pair<TextPattern, const char *> kCleanup[] = {
        {TextPattern::literal(" ."), "."},        {TextPattern::literal(" ?"), "?"},
        {TextPattern::literal(" !"), "!"},        {TextPattern::literal(" ,"), ","},
        {TextPattern::literal(" ' "), "'"},       {TextPattern::literal(" n't"), "n't"},
        {TextPattern::literal(" 'm"), "'m"},      {TextPattern::literal(" do not"), " don't"},
        {TextPattern::literal(" 's"), "'s"},      {TextPattern::literal(" 've"), "'ve"},
        {TextPattern::literal(" 're"), "'re"},
    };
    for (size_t i = 0; i < tokens.size(); ++i) {
        std::string &token = tokens[i];
        if (i > 0) {
            // An empty prefix starts every token, so no token gets a space (as in Hugging Face).
            if (token.compare(0, prefix_.size(), prefix_) == 0) token.erase(0, prefix_.size());
            else token = " " + token;  // (insert(0, " ") trips GCC 12's -Wrestrict)
        }
        if (cleanup_)
            for (const auto &[pattern, content] : kCleanup) token = pattern.replace_all(token, content);
    }
}

}  // namespace pagoda::tok
