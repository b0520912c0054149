#include "tokenizer/added_tokens.hpp"

#include <algorithm>

#include <unicode/uchar.h>

#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {

// Where the code point ending at `pos` starts (pos - 1 for an invalid byte).
size_t previous_boundary(std::string_view text, size_t pos) {
    size_t begin = pos - 1;
    while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80 && pos - begin < 4) --begin;
    return utf8_sequence_length(text, begin) == pos - begin ? begin : pos - 1;
}

char32_t code_point_before(std::string_view text, size_t pos) {
    const size_t begin = previous_boundary(text, pos);
    return utf8_sequence_length(text, begin) == pos - begin ? utf8_decode_at(text, begin) : 0xFFFD;
}

char32_t code_point_at(std::string_view text, size_t pos) {
    return utf8_sequence_length(text, pos) > 0 ? utf8_decode_at(text, pos) : 0xFFFD;
}

bool is_word_character(char32_t c) { return c == '_' || u_isalnum(UChar32(c)); }
bool is_white_space(char32_t c) { return u_isUWhiteSpace(UChar32(c)); }

}  // namespace

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
    for (uint32_t i = 0; i < tokens_.size(); ++i) {
        if (tokens_[i].content.empty()) continue;
        by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
        has_normalized_ |= tokens_[i].normalized;
    }
    for (auto &list : by_first_byte_)
        std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
            return tokens_[a].content.size() > tokens_[b].content.size();
        });
}

void AddedTokens::split(std::string_view text, bool normalized, bool parse_special,
                        std::vector<TextSegment> &out) const {
    size_t text_begin = 0;  // where the pending text stretch starts
    auto push_text = [&](size_t end) {
        if (end > text_begin) out.push_back({text.substr(text_begin, end - text_begin), -1});
    };
    for (size_t pos = 0; pos < text.size();) {
        const AddedToken *found = nullptr;
        for (uint32_t index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
            const AddedToken &t = tokens_[index];
            if (t.normalized != normalized || (t.special && !parse_special)) continue;
            if (text.compare(pos, t.content.size(), t.content) != 0) continue;
            const size_t end = pos + t.content.size();
            if (t.single_word && ((pos > 0 && is_word_character(code_point_before(text, pos))) ||
                                  (end < text.size() && is_word_character(code_point_at(text, end)))))
                continue;
            found = &t;
            break;
        }
        if (found == nullptr) {
            pos += utf8_step(text, pos);
            continue;
        }
        size_t begin = pos, end = pos + found->content.size();
        if (found->lstrip)
            while (begin > text_begin && is_white_space(code_point_before(text, begin)))
                begin = previous_boundary(text, begin);
        if (found->rstrip)
            while (end < text.size() && is_white_space(code_point_at(text, end))) end += utf8_step(text, end);
        push_text(begin);
        out.push_back({text.substr(pos, found->content.size()), found->id});
        text_begin = pos = end;
    }
    push_text(text.size());
}

}  // namespace pagoda::tok
