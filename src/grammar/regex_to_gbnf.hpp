// Regular expressions (vLLM's guided_regex, JSON Schema's pattern) compiled to GBNF text.
//
// The dialect is the common subset of ECMAScript and Python `re`: literals; `.` (any code point
// but \n); classes `[...]` with ranges and `^`; \d \D \w \W \s \S inside and outside classes;
// the escapes \n \t \r \f \v \0 \xHH \uHHHH \u{H...} (and \b, a backspace, inside a class); any
// punctuation escaped; groups (...), (?:...), (?<name>...), (?P<name>...); `|`; the quantifiers
// * + ? {n} {n,} {n,m}, lazy or not (the language is the same); `^` first and `$` last in a
// top-level alternative. \d is [0-9] and \w is [A-Za-z0-9_] (ASCII, as in ECMAScript without the
// u flag); \s is ECMAScript's whitespace, Unicode's spaces included.
//
// Refused by name, with the offset in the pattern: backreferences, lookaround, \b and \B outside
// a class, inline flags and comments `(?i)`, atomic groups, possessive quantifiers, \p{...},
// counts past kMaxRepeat, a `{` that does not start a quantifier (the two dialects read it
// differently), octal escapes, and anchors anywhere else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::grammar {

// Where the pattern must match: the whole text (guided_regex), or anywhere in it (JSON Schema's
// `pattern`: each top-level alternative may be anchored by a leading `^` and a trailing `$`;
// an unanchored side admits any text).
enum class RegexScope : uint8_t { whole, search };

// How the matched text is written: as is, or as the content of a JSON string (between the
// quotes). A JSON string's content is its value escaped; the grammar admits one spelling of each
// character, the one Python's json.dumps(ensure_ascii=False) and nlohmann's dump() write: `"` and
// `\` as \" and \\, \b \f \n \r \t, other controls as \u00xx (lowercase), anything else raw.
enum class RegexText : uint8_t { raw, json_string_content };

// A GBNF expression (alternatives: wrap it in parentheses to embed it) for the texts `pattern`
// matches, written as `text` says. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) "regex: <construct>
// at offset <n> ..." for anything outside the dialect above, and when the expression (or the
// grammar its counted repetitions expand to) would be too large. `grammar_size`, when given,
// receives an estimate of the rules and elements the expression becomes once parsed, for a
// caller that bounds a larger grammar.
std::string regex_to_gbnf_expression(std::string_view pattern, RegexScope scope, RegexText text,
                                     size_t *grammar_size = nullptr);

// A whole grammar, `root ::= ...`, for the texts that `pattern` matches in full (the pattern is
// anchored at both ends). An empty pattern matches the empty text.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace pagoda::grammar
