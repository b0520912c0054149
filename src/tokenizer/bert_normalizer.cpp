// BertNormalizer, StripAccents and Strip: the normalizers of WordPiece (BERT) and some Unigram
// (ALBERT) vocabularies.
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include "common/error.hpp"
#include "tokenizer/normalizers.hpp"
#include "tokenizer/unicode_classes.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {

// Calls f(code point, its bytes) for each code point; f(0xFFFFFFFF, byte) for a byte that
// starts no well-formed sequence (kept as it is: Hugging Face never sees such text).
constexpr char32_t kInvalid = 0xFFFFFFFF;

template <class F>
void for_each_code_point(std::string_view text, F f) {
    for (size_t pos = 0; pos < text.size();) {
        const size_t n = utf8_sequence_length(text, pos);
        if (n == 0) {
            f(kInvalid, text.substr(pos, 1));
            ++pos;
        } else {
            f(utf8_decode_at(text, pos), text.substr(pos, n));
            pos += n;
        }
    }
}

// Full lowercase mapping of one code point alone, so no context rule applies (İ gives "i̇").
void append_lowercase(std::string &out, char32_t c, std::string_view bytes) {
    if (c < 0x80) {
        out += char(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        return;
    }
    UChar src[2], dest[8];
    int32_t src_len = 0;
    U16_APPEND_UNSAFE(src, src_len, UChar32(c));
    UErrorCode status = U_ZERO_ERROR;
    const int32_t len = u_strToLower(dest, 8, src, src_len, "", &status);
    if (U_FAILURE(status)) {  // no code point lowercases to more than 3 UTF-16 units
        out += bytes;
        return;
    }
    for (int32_t i = 0; i < len;) {
        UChar32 lower;
        U16_NEXT(dest, i, len, lower);
        append_utf8(out, char32_t(lower));
    }
}

void strip_nonspacing_marks(std::string &text) {
    std::string out;
    out.reserve(text.size());
    for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
        if (c == kInvalid || !is_nonspacing_mark(c)) out += bytes;
    });
    text = std::move(out);
}

}  // namespace

void BertNormalizer::normalize(std::string &text) const {
    if (clean_text_ || handle_chinese_chars_) {
        std::string out;
        out.reserve(text.size() + text.size() / 4);
        for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
            if (c != kInvalid && clean_text_) {
                if (c == 0 || c == 0xFFFD || is_bert_control(c)) return;
                if (is_bert_whitespace(c)) {
                    out += ' ';
                    return;
                }
            }
            if (c != kInvalid && handle_chinese_chars_ && is_cjk_ideograph(c)) {
                out.append(" ").append(bytes).append(" ");
                return;
            }
            out += bytes;
        });
        text = std::move(out);
    }
    if (strip_accents_) {
        UnicodeNormalizer(UnicodeNormalizer::Form::NFD).normalize(text);
        strip_nonspacing_marks(text);
    }
    if (lowercase_) {
        std::string out;
        out.reserve(text.size());
        for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
            if (c == kInvalid) out += bytes;
            else append_lowercase(out, c, bytes);
        });
        text = std::move(out);
    }
}

void StripAccentsNormalizer::normalize(std::string &text) const { strip_nonspacing_marks(text); }

void StripNormalizer::normalize(std::string &text) const {
    size_t begin = 0, end = text.size();
    if (left_)
        while (begin < end) {
            const size_t n = utf8_sequence_length(text, begin);
            if (n == 0 || !is_bert_whitespace(utf8_decode_at(text, begin))) break;
            begin += n;
        }
    if (right_)
        while (end > begin) {
            size_t start = end - 1;  // back to the start of the last code point
            while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 && end - start < 4) --start;
            if (utf8_sequence_length(text, start) != end - start || !is_bert_whitespace(utf8_decode_at(text, start))) break;
            end = start;
        }
    text = text.substr(begin, end - begin);
}

}  // namespace pagoda::tok
