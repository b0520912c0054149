#include "tokenizer/py_text.hpp"

#include <unicode/uchar.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/normalizers.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok::py {

bool is_space(char32_t c) {
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

namespace {

// The code point at `i` (U+FFFD for a stray byte), moving `i` past it.
char32_t next_code_point(std::string_view text, size_t &i) {
    const size_t n = utf8_sequence_length(text, i);
    const char32_t c = n == 0 ? U'\uFFFD' : utf8_decode_at(text, i);
    i += n == 0 ? 1 : n;
    return c;
}

}  // namespace

std::u32string code_points(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) out.push_back(next_code_point(text, i));
    return out;
}

std::string to_utf8(std::u32string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t c : text) append_utf8(out, c);
    return out;
}

size_t length(std::string_view text) {
    size_t n = 0;
    for (size_t i = 0; i < text.size(); i += utf8_step(text, i)) ++n;
    return n;
}

std::string strip(std::string_view text, const std::optional<std::string> &chars, StripSide side) {
    const std::u32string s = code_points(text);
    const std::u32string set = chars ? code_points(*chars) : std::u32string();
    auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
    size_t begin = 0, end = s.size();
    if (side != StripSide::Right)
        while (begin < end && strippable(s[begin])) ++begin;
    if (side != StripSide::Left)
        while (end > begin && strippable(s[end - 1])) --end;
    return to_utf8(std::u32string_view(s).substr(begin, end - begin));
}

namespace {

std::vector<std::string> split_whitespace(const std::u32string &s, int64_t maxsplit, bool from_right) {
    // Collect the runs of non-space, then merge the tail (or head) beyond maxsplit back, as Python
    // keeps the rest of the string unsplit (and unstripped on that side).
    std::vector<std::pair<size_t, size_t>> words;
    for (size_t i = 0; i < s.size();) {
        while (i < s.size() && is_space(s[i])) ++i;
        if (i == s.size()) break;
        size_t j = i;
        while (j < s.size() && !is_space(s[j])) ++j;
        words.emplace_back(i, j);
        i = j;
    }
    auto piece = [&](size_t begin, size_t end) { return to_utf8(std::u32string_view(s).substr(begin, end - begin)); };
    std::vector<std::string> out;
    if (maxsplit < 0 || words.size() <= size_t(maxsplit)) {
        for (auto [a, b] : words) out.push_back(piece(a, b));
        return out;
    }
    // Past maxsplit the rest stays whole, its far end unstripped, as Python leaves it.
    const size_t keep = size_t(maxsplit);
    if (!from_right) {
        for (size_t k = 0; k < keep; ++k) out.push_back(piece(words[k].first, words[k].second));
        out.push_back(piece(words[keep].first, s.size()));
        return out;
    }
    const size_t first_whole = words.size() - keep;  // words from this one on are split out
    out.push_back(piece(0, words[first_whole - 1].second));
    for (size_t k = first_whole; k < words.size(); ++k) out.push_back(piece(words[k].first, words[k].second));
    return out;
}

}  // namespace

std::vector<std::string> split(std::string_view text, const std::optional<std::string> &sep,
                               int64_t maxsplit, bool from_right) {
    if (!sep) return split_whitespace(code_points(text), maxsplit, from_right);
    std::vector<std::string> out;
    const std::string &d = *sep;
    if (!from_right) {
        size_t start = 0;
        while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
            const size_t at = text.find(d, start);
            if (at == std::string_view::npos) break;
            out.emplace_back(text.substr(start, at - start));
            start = at + d.size();
        }
        out.emplace_back(text.substr(start));
        return out;
    }
    size_t end = text.size();
    std::vector<std::string> reversed;
    while (maxsplit < 0 || int64_t(reversed.size()) < maxsplit) {
        if (end < d.size()) break;
        const size_t at = text.rfind(d, end - d.size());
        if (at == std::string_view::npos) break;
        reversed.emplace_back(text.substr(at + d.size(), end - at - d.size()));
        end = at;
    }
    out.emplace_back(text.substr(0, end));
    out.insert(out.end(), reversed.rbegin(), reversed.rend());
    return out;
}

std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                    int64_t count) {
    std::string out;
    if (old_text.empty()) {
        // Python inserts `new` before each code point and at the end.
        int64_t done = 0;
        size_t i = 0;
        for (; i < text.size() && (count < 0 || done < count); ++done) {
            out += new_text;
            const size_t n = utf8_step(text, i);
            out += text.substr(i, n);
            i += n;
        }
        if (i == text.size() && (count < 0 || done < count)) out += new_text;
        out += text.substr(i);
        return out;
    }
    size_t start = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t at = text.find(old_text, start);
        if (at == std::string_view::npos) break;
        out += text.substr(start, at - start);
        out += new_text;
        start = at + old_text.size();
    }
    out += text.substr(start);
    return out;
}

namespace {

std::string utf8_of(char32_t c) {
    std::string out;
    append_utf8(out, c);
    return out;
}

// str.islower()/isupper(): some cased code point, and none of the other case or titlecase.
bool only_case(std::string_view text, UProperty wanted, UProperty other) {
    bool cased = false;
    for (char32_t c : code_points(text)) {
        if (u_hasBinaryProperty(UChar32(c), other) || u_istitle(UChar32(c))) return false;
        if (u_hasBinaryProperty(UChar32(c), wanted)) cased = true;
    }
    return cased;
}

bool is_cased(char32_t c) {
    return u_hasBinaryProperty(UChar32(c), UCHAR_LOWERCASE) || u_hasBinaryProperty(UChar32(c), UCHAR_UPPERCASE) ||
           u_istitle(UChar32(c));
}

std::string title_char(char32_t c) { return utf8_of(char32_t(u_totitle(UChar32(c)))); }

}  // namespace

// ICU's full (multi-character) case mappings in the root locale, which is what Python's
// str.upper/lower apply; lowering is the tokenizer's Lowercase normalizer.
std::string upper(std::string_view text) {
    std::string out;
    icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size())))
        .toUpper(icu::Locale::getRoot())
        .toUTF8String(out);
    return out;
}

std::string lower(std::string_view text) {
    std::string out(text);
    UnicodeNormalizer(UnicodeNormalizer::Form::Lowercase).normalize(out);
    return out;
}

std::string title(std::string_view text) {
    std::string out;
    bool previous_cased = false;
    for (char32_t c : code_points(text)) {
        out += previous_cased ? lower(utf8_of(c)) : title_char(c);
        previous_cased = is_cased(c);
    }
    return out;
}

std::string capitalize(std::string_view text) {
    const std::u32string s = code_points(text);
    if (s.empty()) return {};
    return title_char(s[0]) + lower(to_utf8(std::u32string_view(s).substr(1)));
}

bool is_lower(std::string_view text) { return only_case(text, UCHAR_LOWERCASE, UCHAR_UPPERCASE); }
bool is_upper(std::string_view text) { return only_case(text, UCHAR_UPPERCASE, UCHAR_LOWERCASE); }

std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    // Shortest round-trip digits in scientific form, "d.ddde±x", then laid out as Python's repr:
    // fixed notation while the decimal exponent is in [-4, 16), else scientific.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::atoi(sci.c_str() + e + 1);
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    const int point = exponent + 1;  // digits before the decimal point
    if (exponent < -4 || exponent >= 16) {
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp;
    }
    if (point <= 0) return sign + "0." + std::string(size_t(-point), '0') + digits;
    if (size_t(point) >= digits.size()) return sign + digits + std::string(size_t(point) - digits.size(), '0') + ".0";
    return sign + digits.substr(0, size_t(point)) + "." + digits.substr(size_t(point));
}

namespace {

bool is_printable(char32_t c) {
    if (c == ' ') return true;
    switch (u_charType(UChar32(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED: case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR:
        return false;
    default:
        return true;
    }
}

void append_hex(std::string &out, const char *prefix, uint32_t value, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
    out += buf;
}

}  // namespace

std::string string_repr(std::string_view text) {
    const bool has_single = text.find('\'') != std::string_view::npos;
    const bool has_double = text.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : code_points(text)) {
        if (c == char32_t(quote) || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            append_hex(out, "\\x", c, 2);
        } else if (c < 0x80 || is_printable(c)) {
            append_utf8(out, c);
        } else if (c <= 0xFF) {
            append_hex(out, "\\x", c, 2);
        } else if (c <= 0xFFFF) {
            append_hex(out, "\\u", c, 4);
        } else {
            append_hex(out, "\\U", c, 8);
        }
    }
    out += quote;
    return out;
}

std::string json_quote(std::string_view text, bool ensure_ascii) {
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
        const unsigned char b = static_cast<unsigned char>(text[i]);
        if (b < 0x80) {
            switch (b) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (b < 0x20) append_hex(out, "\\u", b, 4);
                else out += char(b);
            }
            ++i;
            continue;
        }
        const char32_t c = next_code_point(text, i);
        if (!ensure_ascii) {
            append_utf8(out, c);
        } else if (c <= 0xFFFF) {
            append_hex(out, "\\u", c, 4);
        } else {
            const uint32_t v = c - 0x10000;
            append_hex(out, "\\u", 0xD800 + (v >> 10), 4);
            append_hex(out, "\\u", 0xDC00 + (v & 0x3FF), 4);
        }
    }
    return out + "\"";
}

namespace {

// Python allows one underscore between digits ("1_000"), nowhere else; returns the digits alone,
// or nullopt when an underscore is misplaced.
std::optional<std::string> without_underscores(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '_') {
            out += s[i];
            continue;
        }
        if (i == 0 || i + 1 == s.size() || !std::isxdigit(static_cast<unsigned char>(s[i - 1])) ||
            !std::isxdigit(static_cast<unsigned char>(s[i + 1])))
            return std::nullopt;
    }
    return out;
}

std::string_view trim_space(std::string_view s) {
    // int()/float() strip Unicode whitespace; ASCII is what matters for numbers in practice.
    while (!s.empty() && is_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && is_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text, int base) {
    std::string_view s = trim_space(text);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    auto has_prefix = [&](char lower) {
        return s.size() >= 2 && s[0] == '0' && (s[1] == lower || s[1] == char(lower - 32));
    };
    if (base == 0 || base == 16 || base == 8 || base == 2) {
        const char letter = base == 16 ? 'x' : base == 8 ? 'o' : base == 2 ? 'b' : 0;
        if (base == 0) {
            if (has_prefix('x')) base = 16;
            else if (has_prefix('o')) base = 8;
            else if (has_prefix('b')) base = 2;
            else base = 10;
            if (base != 10) s.remove_prefix(2);
        } else if (has_prefix(letter)) {
            s.remove_prefix(2);
        }
        if (!s.empty() && s[0] == '_') s.remove_prefix(1);
    }
    if (base < 2 || base > 36) return std::nullopt;
    const auto digits = without_underscores(s);
    if (!digits || digits->empty()) return std::nullopt;
    uint64_t value = 0;
    const auto res = std::from_chars(digits->data(), digits->data() + digits->size(), value, base);
    if (res.ec != std::errc() || res.ptr != digits->data() + digits->size()) return std::nullopt;
    if (value > uint64_t(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
    return negative ? int64_t(0 - value) : int64_t(value);
}

std::optional<double> parse_float(std::string_view text) {
    const std::string_view s = trim_space(text);
    const auto cleaned = without_underscores(s);
    if (!cleaned || cleaned->empty()) return std::nullopt;
    std::string lowered;
    for (char c : *cleaned) lowered += char(std::tolower(static_cast<unsigned char>(c)));
    std::string_view body = lowered;
    const bool negative = !body.empty() && body[0] == '-';
    if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
    if (body == "inf" || body == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
    if (body == "nan") return std::nan("");
    // Only decimal forms: digits, one point, an exponent (strtod would also take hex floats).
    for (char c : body)
        if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' && c != '-')
            return std::nullopt;
    char *end = nullptr;
    const double v = std::strtod(lowered.c_str(), &end);
    if (end != lowered.c_str() + lowered.size()) return std::nullopt;
    return v;
}

}  // namespace pagoda::tok::py
