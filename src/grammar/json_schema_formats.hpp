// GBNF for the string formats of JSON Schema that structured output honours.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagoda::grammar {

// A GBNF expression for the content (between the quotes) of a string in `format`, or nothing for
// a format this does not know. The formats: date (YYYY-MM-DD, the day not checked against the
// month), time (RFC 3339 full-time: hh:mm:ss, an optional fraction, then Z or an offset),
// date-time (date "T" time), uuid (8-4-4-4-12 hex digits, either case), email (a practical
// subset: dot-separated atoms of RFC 5322's atext, '@', then two or more dot-separated host name
// labels) and ipv4 (dotted decimal, 0 to 255, no leading zeros). None of them needs a JSON escape.
std::optional<std::string> string_format_gbnf(std::string_view format);

}  // namespace pagoda::grammar
