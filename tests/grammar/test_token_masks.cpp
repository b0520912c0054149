// Token masks against a plain reference: on random walks through several grammars with a
// random vocabulary (shared prefixes, multi-byte characters, tokens that run past a rule's end),
// the mask ConstraintMatcher fills must equal, token by token, what reading the token's bytes
// from the live stacks says. Also: end tokens only where the text may end, finishing, forks
// going their own ways, logits masked to -inf, and the "no token allowed" error.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_matcher.hpp"
#include "grammar/grammar.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using namespace pagoda::grammar;

namespace {

constexpr int32_t kEnd = 0;      // the end-of-sequence token
constexpr int32_t kSpecial = 1;  // a control token: never text

const char *const kGrammars[] = {
    // JSON-ish objects with nesting, strings with escapes and Unicode, numbers.
    R"gbnf(root ::= object
       object ::= "{" ( pair ( ", " pair )* )? "}"
       pair ::= string ": " value
       value ::= object | string | number | "true" | "[" ( value ( ", " value )* )? "]"
       string ::= "\"" ( [^"\\] | "\\" ["\\n] )* "\""
       number ::= "-"? ( "0" | [1-9] [0-9]{0,3} ) ( "." [0-9]+ )?)gbnf",
    // Balanced brackets of two kinds.
    R"gbnf(root ::= item* "."
       item ::= "(" item* ")" | "[" item* "]" | [a-c])gbnf",
    // Regex-like: alternatives with shared prefixes, bounded repeats, a multi-byte class.
    R"gbnf(root ::= ( "ab" | "abc" | "b" [a-c]{2,3} ) [\u00e0-\u00ff\u4e00-\u4e08]+ ( "!" | "" ))gbnf",
    // Ambiguous: several parses stay open.
    R"gbnf(root ::= ( "a" | "aa" | "a" "b"? )+ "c"?)gbnf",
};

// Tokens: every ASCII character that the grammars use, random strings over them (so many share
// prefixes and many cross rule ends), some multi-byte characters whole and split.
std::vector<std::string> random_vocabulary(std::mt19937 &rng) {
    const std::string alphabet = "{}[]()\":, \\n-.0123456789abctrue!xyz";
    std::vector<std::string> v = {"", ""};  // kEnd and kSpecial carry no text
    for (char c : alphabet) v.push_back(std::string(1, c));
    for (const char *multi : {"\xc3\xa0", "\xc3\xbf", "\xe4\xb8\x80", "\xe4\xb8\x88", "\xe4\xb8\x89"}) {
        v.push_back(multi);
        v.push_back(std::string(multi, 1));      // a lead byte alone
        v.push_back(std::string(multi + 1));     // the rest
        v.push_back(std::string("a") + multi);
    }
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), len(2, 7);
    for (int i = 0; i < 400; ++i) {
        std::string s;
        for (size_t n = len(rng); s.size() < n;) s += alphabet[pick(rng)];
        v.push_back(s);
    }
    v.push_back("\"a\": ");
    v.push_back("{\"");
    v.push_back("\"}");
    v.push_back("1, ");
    return v;
}

// Whether reading `bytes` from the stacks `live` keeps a parse (or completes one at the end).
bool reads(const std::shared_ptr<const Points> &points, const std::string &text_so_far,
           const std::string &bytes) {
    Pushdown pushdown(points);
    std::vector<uint32_t> live, next;
    StepEnds ends;
    pushdown.start(live, ends);
    const std::string all = text_so_far + bytes;
    for (char c : all) {
        if (live.empty()) return false;
        ends = {};
        pushdown.step(live, static_cast<uint8_t>(c), next, ends);
        live.swap(next);
    }
    return !live.empty() || ends.accepted;
}

void test_masks_match_the_reference(void **) {
    std::mt19937 rng(7);
    for (const char *text : kGrammars) {
        const Grammar grammar = parse_gbnf(text);
        for (int vocab_round = 0; vocab_round < 2; ++vocab_round) {
            const std::vector<std::string> tokens = random_vocabulary(rng);
            const int32_t rows = int32_t(tokens.size()) + 3;  // padded logits
            auto vocabulary = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{kEnd}, rows);
            auto compiled = std::make_shared<const CompiledConstraint>(grammar, vocabulary);
            for (int walk = 0; walk < 12; ++walk) {
                ConstraintMatcher matcher(compiled);
                std::string generated;
                TokenMask mask;
                for (int step = 0; step < 40 && !matcher.finished(); ++step) {
                    matcher.fill_mask(mask);
                    std::vector<int32_t> allowed;
                    for (int32_t id = 0; id < rows; ++id) {
                        bool want = false;
                        if (id == kEnd) want = matcher.can_end();
                        else if (id != kSpecial && id < int32_t(tokens.size()))
                            want = reads(compiled->points(), generated, tokens[size_t(id)]);
                        if (mask.test(id) != want) {
                            print_error("grammar %s\nafter '%s', token %d '%s': mask %d, reference %d\n",
                                        text, generated.c_str(), id, tokens[size_t(id)].c_str(),
                                        int(mask.test(id)), int(want));
                            fail();
                        }
                        if (want) allowed.push_back(id);
                    }
                    assert_false(allowed.empty());
                    // Prefer text over ending so walks go somewhere.
                    int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
                    if (id == kEnd && allowed.size() > 1 && step < 30) id = allowed[1];
                    assert_true(matcher.accept(id));
                    if (id != kEnd) generated += tokens[size_t(id)];
                }
            }
            assert_true(compiled->places_known() > 0);
        }
    }
}

void test_refuses_what_the_mask_refuses(void **) {
    const std::vector<std::string> tokens = {"", "", "a", "b", "ab", "c"};
    auto vocabulary = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{kEnd}, 6);
    auto compiled = std::make_shared<const CompiledConstraint>(parse_gbnf(R"gbnf(root ::= "a" "b"+)gbnf"), vocabulary);
    ConstraintMatcher m(compiled);
    assert_false(m.can_end());
    assert_false(m.accept(kEnd));      // not yet a whole sentence
    assert_false(m.accept(3));         // "b" cannot start
    assert_false(m.accept(kSpecial));  // never text
    assert_true(m.accept(4));          // "ab"
    assert_true(m.can_end());
    assert_false(m.finished());        // more b's may come

    ConstraintMatcher fork = m;        // a forked sequence goes its own way
    assert_true(fork.accept(kEnd));
    assert_true(fork.finished());
    assert_false(m.finished());
    assert_true(m.accept(3));
    assert_false(m.accept(5));

    // Masked logits: -inf exactly where the mask is clear, the padded rows included.
    std::vector<float> logits(6, 1.0f);
    m.mask_logits(logits);
    const bool allowed[] = {true, false, false, true, false, false};
    for (size_t i = 0; i < logits.size(); ++i) assert_int_equal(std::isinf(logits[i]), !allowed[i]);
}

void test_finishes_when_nothing_may_follow(void **) {
    const std::vector<std::string> tokens = {"", "", "ye", "s", "yes", "no"};
    auto vocabulary = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{kEnd}, 6);
    auto compiled = std::make_shared<const CompiledConstraint>(parse_gbnf(R"gbnf(root ::= "yes" | "no")gbnf"), vocabulary);
    ConstraintMatcher m(compiled);
    assert_true(m.accept(2));
    assert_false(m.finished());
    assert_true(m.accept(3));
    assert_true(m.finished());  // "yes" is whole and nothing may follow it
}

void test_no_token_can_spell_it(void **) {
    const std::vector<std::string> tokens = {"", "", "a", "b"};
    auto vocabulary = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{kEnd}, 4);
    auto compiled = std::make_shared<const CompiledConstraint>(parse_gbnf(R"gbnf(root ::= "a" "q")gbnf"), vocabulary);
    ConstraintMatcher m(compiled);
    assert_true(m.accept(2));
    std::vector<float> logits(4, 0.0f);
    try {
        m.mask_logits(logits);
        fail_msg("expected an error");
    } catch (const pagoda::Error &e) {
        assert_non_null(strstr(e.what(), "allows no token"));
    }
}

void test_long_generation_stays_compact(void **) {
    // Many steps of a nested grammar: the matcher keeps working as its frames are compacted.
    std::vector<std::string> tokens = {"", "", "[", "]", "[[", "]]", "a", "aa", "[a", "a]"};
    auto vocabulary = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{kEnd}, 10);
    auto compiled = std::make_shared<const CompiledConstraint>(
        parse_gbnf(R"gbnf(root ::= list
                      list ::= "[" (list | "a")* "]")gbnf"), vocabulary);
    ConstraintMatcher m(compiled);
    std::mt19937 rng(3);
    TokenMask mask;
    std::string text;
    for (int step = 0; step < 20000 && !m.finished(); ++step) {
        m.fill_mask(mask);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < 10; ++id)
            if (mask.test(id)) allowed.push_back(id);
        assert_false(allowed.empty());
        const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        assert_true(m.accept(id));
        text += tokens[size_t(id)];
    }
    if (m.finished()) assert_true(matches_fully(parse_gbnf(R"gbnf(root ::= list
                      list ::= "[" (list | "a")* "]")gbnf"), text));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masks_match_the_reference),
        cmocka_unit_test(test_refuses_what_the_mask_refuses),
        cmocka_unit_test(test_finishes_when_nothing_may_follow),
        cmocka_unit_test(test_no_token_can_spell_it),
        cmocka_unit_test(test_long_generation_stays_compact),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
