#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {

// How many bytes a lead byte announces, and the range its second byte must lie in (Unicode
// Table 3-7: this is what rules out overlong forms, surrogates and values past U+10FFFF).
struct LeadByte {
    int length;
    unsigned char second_lo, second_hi;
};

LeadByte classify(unsigned char b) {
    if (b < 0x80) return {1, 0, 0};
    if (b < 0xC2) return {0, 0, 0};
    if (b < 0xE0) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b < 0xF0) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b < 0xF4) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Bytes of the valid start of a sequence at `pos` (how far it goes before a byte breaks it or the
// text ends), and whether it is complete.
size_t valid_prefix(std::string_view text, size_t pos, bool &complete) {
    const auto b0 = static_cast<unsigned char>(text[pos]);
    const LeadByte lead = classify(b0);
    complete = false;
    if (lead.length == 0) return 0;
    if (lead.length == 1) {
        complete = true;
        return 1;
    }
    size_t n = 1;
    for (; n < size_t(lead.length); ++n) {
        if (pos + n >= text.size()) return n;
        const auto b = static_cast<unsigned char>(text[pos + n]);
        const unsigned char lo = n == 1 ? lead.second_lo : 0x80;
        const unsigned char hi = n == 1 ? lead.second_hi : 0xBF;
        if (b < lo || b > hi) return n;
    }
    complete = true;
    return n;
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t pos) {
    bool complete = false;
    const size_t n = valid_prefix(text, pos, complete);
    return complete ? n : 0;
}

char32_t utf8_decode_at(std::string_view text, size_t pos) {
    const auto b0 = static_cast<unsigned char>(text[pos]);
    const size_t n = utf8_sequence_length(text, pos);
    if (n <= 1) return b0;
    char32_t cp = b0 & (0xFF >> (n + 1));
    for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    return cp;
}

void append_utf8(std::string &out, char32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        bool complete = false;
        const size_t n = valid_prefix(bytes, pos, complete);
        if (complete) {
            out.append(bytes.substr(pos, n));
            pos += n;
        } else {
            out.append(kReplacementCharacter);
            pos += n == 0 ? 1 : n;  // the maximal ill-formed subpart
        }
    }
    return out;
}

bool is_valid_utf8(std::string_view bytes) {
    for (size_t pos = 0; pos < bytes.size();) {
        const size_t n = utf8_sequence_length(bytes, pos);
        if (n == 0) return false;
        pos += n;
    }
    return true;
}

}  // namespace pagoda::tok
