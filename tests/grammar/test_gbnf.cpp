// parse_gbnf and matches_fully: literals and escapes, character classes over UTF-8, groups,
// every repetition form (checked against counting), recursion, tail calls that keep deep
// repetition flat, and errors that name the construct and its line:column.
#include <string>
#include <vector>

#include "common/error.hpp"
#include "grammar/grammar.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::grammar::matches_fully;
using pagoda::grammar::parse_gbnf;

namespace {

bool matches(const char *grammar, const std::string &text) {
    return matches_fully(parse_gbnf(grammar), text);
}

// The error parse_gbnf gives, or "" when it parses.
std::string error_of(const std::string &grammar) {
    try {
        parse_gbnf(grammar);
    } catch (const pagoda::Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
        return e.what();
    }
    return "";
}

void expect_error(const std::string &grammar, const std::string &needle) {
    const std::string message = error_of(grammar);
    if (message.find(needle) == std::string::npos) {
        print_error("grammar %s\n  gave '%s'\n  expected it to hold '%s'\n", grammar.c_str(),
                    message.c_str(), needle.c_str());
        fail();
    }
}

void test_literals_and_escapes(void **) {
    assert_true(matches(R"(root ::= "hello")", "hello"));
    assert_false(matches(R"(root ::= "hello")", "hell"));
    assert_false(matches(R"(root ::= "hello")", "hello!"));
    assert_true(matches(R"(root ::= "a\"b\\c\n\t\x41\u00e9\U0001F600")",
                        "a\"b\\c\n\tA\xc3\xa9\xf0\x9f\x98\x80"));
    assert_true(matches("root ::= \"caf\xc3\xa9\"", "caf\xc3\xa9"));  // raw UTF-8 in a literal
    assert_true(matches(R"(root ::= "")", ""));
    assert_true(matches("root ::= \"a\" # a comment\n  \"b\"  # another\n", "ab"));
}

void test_classes(void **) {
    const char *g = R"(root ::= [a-c0-9_] [^a-z])";
    assert_true(matches(g, "a7"));
    assert_true(matches(g, "_Z"));
    assert_false(matches(g, "dZ"));
    assert_false(matches(g, "aq"));
    // Negation and `.` cover every UTF-8 length, one code point each.
    for (const char *one : {"Z", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}) {
        assert_true(matches("root ::= .", one));
        assert_true(matches("root ::= [^a]", one));
        assert_false(matches("root ::= .", std::string(one) + one));
    }
    assert_false(matches("root ::= .", "\xc3"));          // half a character
    assert_false(matches("root ::= .", "\xed\xa0\x80"));  // a surrogate is not text
    // Ranges across UTF-8 lengths, at their edges.
    const char *wide = R"(root ::= [\u007e-\u0801])";
    assert_true(matches(wide, "~"));
    assert_true(matches(wide, "\x7f"));
    assert_true(matches(wide, "\xdf\xbf"));      // U+07FF
    assert_true(matches(wide, "\xe0\xa0\x81"));  // U+0801
    assert_false(matches(wide, "\xe0\xa0\x82")); // U+0802
    assert_false(matches(wide, "}"));
    assert_true(matches(R"(root ::= [\]\-\^])", "-"));
    assert_true(matches(R"(root ::= [\]\-\^])", "]"));
}

void test_groups_and_alternatives(void **) {
    const char *g = "root ::= (\"a\" | \"bc\") (\"d\" | ) \"e\"\n";
    for (const char *yes : {"ae", "ade", "bce", "bcde"}) assert_true(matches(g, yes));
    for (const char *no : {"e", "abe", "bcdde", "ad"}) assert_false(matches(g, no));
    const char *multi = "root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"x\"\n";
    assert_true(matches(multi, "12,x,3"));
    assert_false(matches(multi, "12,,3"));
}

void test_repetition_counts(void **) {
    struct Form { const char *postfix; int min, max; };  // max -1 = unbounded
    const Form forms[] = {{"?", 0, 1}, {"*", 0, -1}, {"+", 1, -1}, {"{3}", 3, 3},
                          {"{2,}", 2, -1}, {"{2,4}", 2, 4}, {"{0,2}", 0, 2}, {"{ 1 , 3 }", 1, 3}};
    for (const Form &f : forms) {
        for (const char *unit : {"\"ab\"", "[x]", "(\"a\" \"b\")"}) {
            const std::string g = std::string("root ::= ") + unit + f.postfix + " \"!\"";
            const std::string piece = unit[0] == '[' ? "x" : "ab";
            for (int n = 0; n <= 6; ++n) {
                std::string text;
                for (int i = 0; i < n; ++i) text += piece;
                const bool want = n >= f.min && (f.max < 0 || n <= f.max);
                if (matches(g.c_str(), text + "!") != want) {
                    print_error("%s on %d copies: expected %d\n", g.c_str(), n, int(want));
                    fail();
                }
            }
        }
    }
}

void test_recursion_and_depth(void **) {
    const char *balanced = "root ::= pair*\npair ::= \"(\" root \")\"\n";
    assert_true(matches(balanced, "(()(()))()"));
    assert_false(matches(balanced, "(()"));
    assert_false(matches(balanced, "())("));
    std::string deep(500, '(');
    deep += std::string(500, ')');
    assert_true(matches(balanced, deep));
    // A long repetition stays one frame deep (tail calls): a million bytes parse quickly.
    assert_true(matches("root ::= [a-z]* \".\"", std::string(1000000, 'q') + "."));
}

void test_errors_name_what_and_where(void **) {
    expect_error("root ::= foo", "1:10: rule 'foo' is not defined");
    expect_error("start ::= \"a\"", "no rule named 'root'");
    expect_error("root ::= \"a\"\nroot ::= \"b\"", "2:1: rule 'root' is defined twice");
    expect_error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "'expr' is left-recursive");
    expect_error("root ::= a\na ::= b? a \"x\"\nb ::= \"y\"", "left-recursive");
    expect_error("root ::= (\"a\"?)*", "left-recursive");  // a repeated empty match
    expect_error("root ::= \"abc", "1:10: unterminated string literal");
    expect_error("root ::= [abc", "unterminated character class");
    expect_error("root ::= \"\\q\"", "unknown escape '\\q'");
    expect_error("root ::= \"\\x4\"", "2 hex digits");
    expect_error("root ::= \"\\ud800\"", "no Unicode scalar value");
    expect_error("root ::= [z-a]", "runs backwards");
    expect_error("root ::= \"a\"{1001}", "limit of 1000");
    expect_error("root ::= \"a\"{3,2}", "max below min");
    expect_error("root ::= \"a\"**", "repetition of a repetition");
    expect_error("root ::= (\"a\"", "'(' without a matching ')'");
    expect_error("root ::= \"a\" )", "')' without a matching '('");
    expect_error("root ::= \"a\" @", "1:14: unexpected '@'");
    expect_error("", "holds no rule");
    expect_error("root ::= \"\xff\"", "invalid UTF-8");
    expect_error("root ::= " + std::string(200, '(') + std::string(200, ')'), "nest deeper");
    // Counted copies add up: a grammar past the element limit is refused, not built. (Nested
    // counts do not multiply: each repeats one element, the rule for the inner repetition.)
    std::string wide = "root ::=";
    for (int i = 0; i < 1100; ++i) wide += " \"a\"{1000}";
    expect_error(wide, "grows past");
}

void test_literal_round_trip(void **) {
    for (const std::string &text : {std::string("plain"), std::string("q\"uo\\te"),
                                   std::string("ctl\n\r\t\x01\x7f"), std::string("\xc3\xa9\xe2\x82\xac")}) {
        const std::string g = "root ::= " + pagoda::grammar::gbnf_literal(text);
        assert_true(matches(g.c_str(), text));
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals_and_escapes),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_groups_and_alternatives),
        cmocka_unit_test(test_repetition_counts),
        cmocka_unit_test(test_recursion_and_depth),
        cmocka_unit_test(test_errors_name_what_and_where),
        cmocka_unit_test(test_literal_round_trip),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
