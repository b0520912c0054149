// regex_to_gbnf: a differential test against std::wregex (ECMAScript, whole match) over random
// texts, from an alphabet drawn from each pattern plus noise and from random walks of the
// compiled grammar itself; every refused construct named with its offset; JSON string content
// and search scope, which std::regex cannot judge directly, against hand-made cases.
#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/regex_to_gbnf.hpp"
#include "tokenizer/utf8.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::grammar::Grammar;
using pagoda::grammar::matches_fully;
using pagoda::grammar::parse_gbnf;
using pagoda::grammar::regex_to_gbnf;
using pagoda::grammar::regex_to_gbnf_expression;
using pagoda::grammar::RegexScope;
using pagoda::grammar::RegexText;

namespace {

// UTF-8 to code points (wchar_t is 32 bits here); false for malformed input.
bool to_wide(const std::string &s, std::wstring &out) {
    out.clear();
    for (size_t i = 0; i < s.size();) {
        const auto b = uint8_t(s[i]);
        const int extra = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2
                                     : (b & 0xF8) == 0xF0 ? 3 : -1;
        if (extra < 0 || i + size_t(extra) + 1 > s.size()) return false;
        char32_t cp = extra == 0 ? b : b & (0x3F >> extra);
        for (int k = 1; k <= extra; ++k) {
            if ((uint8_t(s[i + size_t(k)]) & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (uint8_t(s[i + size_t(k)]) & 0x3F);
        }
        out += wchar_t(cp);
        i += size_t(extra) + 1;
    }
    return true;
}

std::string printable(const std::string &s) {
    std::string out;
    for (char c : s) {
        if (uint8_t(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", uint8_t(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

// A random text of the grammar's language: a walk that takes random alternatives and, past a
// depth, the first alternative without rule references (repetition helpers end in "").
void walk(const Grammar &g, uint32_t rule, int depth, std::mt19937 &rng, std::string &out) {
    const auto &alts = g.rules[rule].alternatives;
    size_t pick = std::uniform_int_distribution<size_t>(0, alts.size() - 1)(rng);
    if (depth > 12) {
        for (size_t i = 0; i < alts.size(); ++i) {
            bool plain = true;
            for (const auto &e : alts[i])
                if (e.kind == pagoda::grammar::Element::Kind::rule) plain = false;
            if (plain) {
                pick = i;
                break;
            }
        }
    }
    for (const auto &e : alts[pick]) {
        if (e.kind == pagoda::grammar::Element::Kind::rule) {
            walk(g, e.index, depth + 1, rng, out);
            continue;
        }
        std::vector<uint8_t> bytes;
        for (unsigned b = 0; b < 256; ++b)
            if (g.byte_sets[e.index].has(uint8_t(b))) bytes.push_back(uint8_t(b));
        out += char(bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)]);
    }
}

// Patterns std::wregex reads as ECMAScript (through reference_pattern): no named groups or
// \u{...}, which std::regex lacks.
const char *const kPatterns[] = {
    "abc",
    "a|b|cd",
    "a*b+c?",
    "(ab)*",
    "(a|bc){2,3}",
    "x{0,2}y{3}",
    "[a-c]+[^a-c]",
    "[^\\n]*",
    "\\d{1,3}(\\.\\d{1,3}){3}",
    "\\w+@\\w+\\.com",
    "\\s*-?\\d+\\s*",
    "[\\d\\s]+",
    "[^\\d\\s]+",
    "[\\w-]+",
    ".*",
    "a.c",
    "(a*)*b",
    "(a?b?)+c",
    "(|a)+",
    "^abc$",
    "^(a|b)*$|c",
    "\\x41\\u0042[\\x61-\\x63]",
    "[\xC3\xA9\xC3\xA0-\xC3\xA4]+\xE4\xB8\xAD?",
    "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\",
    "(?:ab|cd)+?e",
    "a{2,}b{0,}",
    "[-a]+[a-]+",
    "\\t\\n\\f\\v\\0?",
    "[^abc]{2}",
    "(\\d+|[a-f]+)(,(\\d+|[a-f]+))*",
    "((a|b)(c|d)?){1,3}",
    "[A-Z][a-z]*( [A-Z][a-z]*)*",
    "(a{0,2}b?){2}",
    "[\\W\\d]x",
    "a??b*?c{1,2}?",
};

// The pattern for std::wregex: the same text, but with `.` and \s \S spelled out, since in the
// "C" locale libstdc++'s `.` also stops at \r, U+2028 and U+2029 and its \s is ASCII only, where
// ECMAScript's \s (regex_to_gbnf's) holds Unicode's spaces too.
std::string reference_pattern(const std::string &pattern) {
    const std::string spaces =
        "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff";
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            if (e == 's')
                out += in_class ? spaces : "[" + spaces + "]";
            else if (e == 'S' && !in_class)
                out += "[^" + spaces + "]";
            else
                out += std::string(1, c) + e;
            continue;
        }
        if (c == '[' && !in_class) in_class = true;
        else if (c == ']' && in_class) in_class = false;
        if (c == '.' && !in_class)
            out += "[^\\n]";
        else
            out += c;
    }
    return out;
}

// Code points for random texts: what the pattern writes, and noise.
std::vector<char32_t> alphabet_for(const std::string &pattern) {
    std::vector<char32_t> out = {'a', 'b', 'c', 'd', 'x', 'y', 'A', 'Z', '0', '5', '9', ' ',
                                 '\t', '\n', '\r', '\f', '\v', '\0', '-', '_', '.', ',', '@',
                                 0xA0, 0x2028, 0x3000, 0xE9, 0xE1, 0x4E2D, 0x1F600};
    std::wstring wide;
    if (to_wide(pattern, wide))
        for (wchar_t c : wide)
            if (c != '\\') out.push_back(char32_t(c));
    return out;
}

void regex_agrees_with_std_regex(void **) {
    std::mt19937 rng(20261129);
    size_t checked = 0, walked = 0, matched = 0, mismatches = 0;
    for (const char *pattern : kPatterns) {
        Grammar g;
        try {
            g = parse_gbnf(regex_to_gbnf(pattern));
        } catch (const pagoda::Error &e) {
            std::printf("pattern %s: %s\n", pattern, e.what());
            fail();
        }
        std::wstring wide_pattern;
        assert_true(to_wide(reference_pattern(pattern), wide_pattern));
        const std::wregex reference(wide_pattern, std::regex::ECMAScript);
        const std::vector<char32_t> alphabet = alphabet_for(pattern);
        const auto check = [&](const std::string &text) {
            std::wstring wide;
            assert_true(to_wide(text, wide));
            const bool ours = matches_fully(g, text);
            const bool theirs = std::regex_match(wide, reference);
            ++checked;
            matched += ours;
            if (ours != theirs) {
                if (++mismatches <= 20)
                    std::printf("pattern %s text '%s': grammar %d, std::regex %d\n", pattern,
                                printable(text).c_str(), ours, theirs);
            }
        };
        for (int i = 0; i < 400; ++i) {
            std::string text;
            const size_t length = std::uniform_int_distribution<size_t>(0, 10)(rng);
            for (size_t k = 0; k < length; ++k)
                pagoda::tok::append_utf8(text, alphabet[std::uniform_int_distribution<size_t>(
                                      0, alphabet.size() - 1)(rng)]);
            check(text);
        }
        for (int i = 0; i < 150; ++i) {
            std::string text;
            walk(g, g.root, 0, rng, text);
            std::wstring wide;
            if (!to_wide(text, wide)) {
                std::printf("pattern %s: the grammar walk gave malformed UTF-8\n", pattern);
                ++mismatches;
                continue;
            }
            ++walked;
            check(text);
        }
    }
    std::printf("%zu texts (%zu from grammar walks), %zu in the language, %zu disagreements\n",
                checked, walked, matched, mismatches);
    assert_int_equal(mismatches, 0);
}

// Named groups and \u{...}: the same language as the plain forms.
void named_groups_and_braced_escapes(void **) {
    const Grammar g = parse_gbnf(regex_to_gbnf("(?<year>\\d{4})-(?P<month>\\d\\d)\\u{1F600}"));
    assert_true(matches_fully(g, "2024-05\xF0\x9F\x98\x80"));
    assert_false(matches_fully(g, "2024-5\xF0\x9F\x98\x80"));
    const Grammar empty = parse_gbnf(regex_to_gbnf(""));
    assert_true(matches_fully(empty, ""));
    assert_false(matches_fully(empty, "a"));
    const Grammar dot = parse_gbnf(regex_to_gbnf("."));
    assert_true(matches_fully(dot, "\r"));
    assert_false(matches_fully(dot, "\n"));
    assert_true(matches_fully(dot, "\xE2\x80\xA8"));
    const Grammar space = parse_gbnf(regex_to_gbnf("\\s"));
    assert_true(matches_fully(space, "\xC2\xA0"));     // U+00A0: ECMAScript whitespace
    assert_true(matches_fully(space, "\xE3\x80\x80")); // U+3000
    assert_false(matches_fully(space, "\xC3\xA9"));
}

void expect_refused(const char *pattern, const char *message) {
    try {
        (void)regex_to_gbnf(pattern);
    } catch (const pagoda::Error &e) {
        if (std::string(e.what()).find(message) == std::string::npos) {
            std::printf("pattern %s: message '%s' lacks '%s'\n", pattern, e.what(), message);
            fail();
        }
        assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
        return;
    }
    std::printf("pattern %s was accepted\n", pattern);
    fail();
}

void refused_constructs_are_named(void **) {
    expect_refused("(a)\\1", "backreference '\\1' at offset 3");
    expect_refused("(?<n>a)\\k<n>", "backreference '\\k' at offset 7");
    expect_refused("(?P<n>a)(?P=n)", "backreference '(?P=' at offset 8");
    expect_refused("a(?=b)", "lookahead '(?=' at offset 1");
    expect_refused("a(?!b)", "lookahead '(?!' at offset 1");
    expect_refused("(?<=a)b", "lookbehind '(?<=' at offset 0");
    expect_refused("(?<!a)b", "lookbehind '(?<!' at offset 0");
    expect_refused("\\bword", "word boundary '\\b' at offset 0");
    expect_refused("a\\B", "word boundary '\\B' at offset 1");
    expect_refused("(?i)abc", "inline flags '(?i' at offset 0");
    expect_refused("a(?s:.)", "inline flags '(?s' at offset 1");
    expect_refused("(?>a)", "atomic group '(?>' at offset 0");
    expect_refused("(?#note)a", "comment '(?#' at offset 0");
    expect_refused("a*+", "possessive quantifier '*+' at offset 1");
    expect_refused("ab++", "possessive quantifier '++' at offset 2");
    expect_refused("a{2}+", "possessive quantifier '{2}+' at offset 1");
    expect_refused("\\p{L}", "Unicode property '\\p' at offset 0");
    expect_refused("\\P{Lu}", "Unicode property '\\P' at offset 0");
    expect_refused("a{1001}", "count 1001 at offset 2");
    expect_refused("a{2,5000}", "count 5000 at offset 4");
    expect_refused("a^b", "anchor '^' at offset 1");
    expect_refused("a$b", "anchor '$' at offset 1");
    expect_refused("(a$)", "anchor '$' at offset 2");
    expect_refused("\\Aabc", "anchor '\\A' at offset 0");
    expect_refused("*a", "quantifier '*' at offset 0 has nothing to repeat");
    expect_refused("a**", "quantifier '*' at offset 2");
    expect_refused("a{", "'{' at offset 1 does not start a quantifier");
    expect_refused("a{,3}", "'{' at offset 1 does not start a quantifier");
    expect_refused("[abc", "'[' at offset 0 is never closed");
    expect_refused("(abc", "'(' at offset 0 is never closed");
    expect_refused("abc)", "')' at offset 3 has no matching '('");
    expect_refused("[z-a]", "range at offset 1 is out of order");
    expect_refused("[\\d-z]", "range at offset 1 has a class escape");
    expect_refused("[]a]", "']' right after '[' at offset 0");
    expect_refused("\\01", "octal escape '\\01' at offset 0");
    expect_refused("\\q", "escape '\\q' at offset 0 is not supported");
    expect_refused("\\cJ", "control escape '\\c' at offset 0");
    expect_refused("a{3,2}", "quantifier at offset 1 has its maximum below its minimum");
    expect_refused("\\uD800", "surrogate escape");
    expect_refused("\xFF", "invalid UTF-8 at offset 0");
    expect_refused(std::string(60, '(').append("a").append(60, ')').c_str(), "nested past");
    expect_refused("(((((((((a{1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000})",
                   "expand past");
}

// In a JSON string each character has one spelling, and a search admits text around the match.
void json_string_content_and_search(void **) {
    const auto grammar = [](const char *pattern, RegexScope scope) {
        return parse_gbnf("root ::= " +
                          regex_to_gbnf_expression(pattern, scope, RegexText::json_string_content) +
                          "\n");
    };
    const Grammar quote = grammar("^a\"b\\\\c\\n\\x01[\\x00-\\x1f]$", RegexScope::search);
    assert_true(matches_fully(quote, "a\\\"b\\\\c\\n\\u0001\\t"));
    assert_true(matches_fully(quote, "a\\\"b\\\\c\\n\\u0001\\u001f"));
    assert_false(matches_fully(quote, "a\"b\\\\c\\n\\u0001\\t"));   // a raw quote
    assert_false(matches_fully(quote, "a\\\"b\\\\c\\n\\u0001\\u0009")); // not the short form
    const Grammar negated = grammar("^[^a]$", RegexScope::search);
    assert_true(matches_fully(negated, "\\\""));
    assert_true(matches_fully(negated, "\\\\"));
    assert_true(matches_fully(negated, "\\u001b"));
    assert_true(matches_fully(negated, "b"));
    assert_false(matches_fully(negated, "a"));
    assert_false(matches_fully(negated, "\""));
    const Grammar search = grammar("ab|^c|d$", RegexScope::search);
    assert_true(matches_fully(search, "xxaby\\n"));
    assert_true(matches_fully(search, "\\u0000ab\\u001f"));
    assert_true(matches_fully(search, "cxx"));
    assert_false(matches_fully(search, "xc"));
    assert_true(matches_fully(search, "xd"));
    assert_false(matches_fully(search, "dx"));
    assert_false(matches_fully(search, "a b"));
    const Grammar whole = grammar("ab", RegexScope::whole);
    assert_true(matches_fully(whole, "ab"));
    assert_false(matches_fully(whole, "xab"));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regex_agrees_with_std_regex),
        cmocka_unit_test(named_groups_and_braced_escapes),
        cmocka_unit_test(refused_constructs_are_named),
        cmocka_unit_test(json_string_content_and_search),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
