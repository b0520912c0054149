#include "tokenizer/unicode_classes.hpp"

#include <unicode/uchar.h>

namespace pagoda::tok {

bool is_bert_whitespace(char32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
    return u_isUWhiteSpace(UChar32(c));
}

bool is_bert_control(char32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    switch (u_charType(UChar32(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE: return true;
    default: return false;
    }
}

bool is_cjk_ideograph(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_bert_punctuation(char32_t c) {
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                         (c >= 0x7B && c <= 0x7E);
    return u_ispunct(UChar32(c));
}

bool is_nonspacing_mark(char32_t c) { return u_charType(UChar32(c)) == U_NON_SPACING_MARK; }

}  // namespace pagoda::tok
