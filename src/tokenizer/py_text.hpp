// Python's `str` semantics on UTF-8 text, as chat templates (run by jinja2 in Python) see them:
// lengths and indices count code points, whitespace is Unicode's (str.isspace), case mapping is
// full Unicode, and numbers print as Python's repr prints them. The Jinja renderer builds on these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::tok::py {

// str.isspace() of one code point: \t\n\v\f\r, \x1c-\x1f, space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_space(char32_t c);

// The text as code points (the text is valid UTF-8; any stray byte becomes U+FFFD).
std::u32string code_points(std::string_view text);
std::string to_utf8(std::u32string_view text);
size_t length(std::string_view text);  // len(): code points

// str.strip/lstrip/rstrip: `chars` absent strips whitespace, else the code points it lists.
enum class StripSide { Both, Left, Right };
std::string strip(std::string_view text, const std::optional<std::string> &chars, StripSide side);

// str.split(sep, maxsplit) and str.rsplit: no `sep` splits on runs of whitespace and drops
// empty pieces. `sep` must not be empty (the caller reports Python's ValueError).
std::vector<std::string> split(std::string_view text, const std::optional<std::string> &sep,
                               int64_t maxsplit, bool from_right = false);

// str.replace(old, new, count): an empty `old` inserts `new` between code points, as Python does.
std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                    int64_t count);

std::string upper(std::string_view text);       // full case mapping ("ß" -> "SS")
std::string lower(std::string_view text);
std::string title(std::string_view text);       // str.title(): "they're" -> "They'Re"
std::string capitalize(std::string_view text);  // str.capitalize(): first titlecased, rest lower
bool is_lower(std::string_view text);           // str.islower()
bool is_upper(std::string_view text);           // str.isupper()

// repr() of a float: shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string float_repr(double value);
// repr() of a str: quotes chosen as Python chooses them, non-printable code points escaped.
std::string string_repr(std::string_view text);
// A JSON string literal as json.dumps writes it (ensure_ascii escapes all non-ASCII as \uXXXX).
std::string json_quote(std::string_view text, bool ensure_ascii);

// Python's int() of a string ("  -1_000 " -> -1000) in `base` (0: from the prefix); nullopt
// when Python would raise ValueError or the value does not fit 64 bits.
std::optional<int64_t> parse_int(std::string_view text, int base);
// Python's float() of a string ("1e3", " inf ", "1_0.5"); nullopt on ValueError.
std::optional<double> parse_float(std::string_view text);

}  // namespace pagoda::tok::py
