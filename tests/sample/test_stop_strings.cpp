// StopStringMatcher: stop strings inside one piece and across pieces, overlapping prefixes,
// several stop strings, holding back and flushing, and a random comparison with a plain
// reference under every way of cutting the text.
#include <cstdio>
#include <string>
#include <vector>

#include "sample/sampler.hpp"
#include "sample/stop_strings.hpp"
#include "sample_test_util.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::sample::Rng;
using pagoda::sample::StopStringMatcher;

namespace {

// What the caller sees after feeding all pieces (and flushing if no stop came).
struct Outcome {
    std::string text;
    bool stopped = false;
    size_t stop_index = StopStringMatcher::kNoStop;
    bool operator==(const Outcome &) const = default;
};

Outcome run(const std::vector<std::string> &stops, const std::vector<std::string> &pieces,
            bool include = false) {
    StopStringMatcher m(stops, include);
    Outcome out;
    for (const std::string &piece : pieces) {
        const StopStringMatcher::Step step = m.feed(piece);
        out.text += step.text;
        if (step.stopped) {
            out.stopped = true;
            out.stop_index = step.stop_index;
            break;
        }
    }
    if (!out.stopped) out.text += m.flush();
    return out;
}

// The rule written plainly: the first end position where some stop string ends; among the stop
// strings ending there, the longest (earliest start).
Outcome reference(const std::vector<std::string> &stops, const std::string &text, bool include) {
    for (size_t end = 1; end <= text.size(); ++end) {
        size_t best = StopStringMatcher::kNoStop;
        for (size_t i = 0; i < stops.size(); ++i) {
            const std::string &s = stops[i];
            if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0 &&
                (best == StopStringMatcher::kNoStop || s.size() > stops[best].size()))
                best = i;
        }
        if (best != StopStringMatcher::kNoStop)
            return {text.substr(0, include ? end : end - stops[best].size()), true, best};
    }
    return {text, false, StopStringMatcher::kNoStop};
}

void stop_inside_one_piece(void **) {
    const Outcome cut = run({"STOP"}, {"hello STOP world"});
    assert_string_equal(cut.text.c_str(), "hello ");
    assert_true(cut.stopped);
    assert_int_equal(cut.stop_index, 0);
    const Outcome kept = run({"STOP"}, {"hello STOP world"}, true);
    assert_string_equal(kept.text.c_str(), "hello STOP");
}

void stop_across_pieces(void **) {
    StopStringMatcher m({"STOP"});
    StopStringMatcher::Step s = m.feed("hel");
    assert_string_equal(s.text.c_str(), "hel");
    s = m.feed("lo ST");  // "ST" could begin "STOP": held back
    assert_string_equal(s.text.c_str(), "lo ");
    assert_false(s.stopped);
    assert_int_equal(m.held_back(), 2);
    s = m.feed("O");
    assert_string_equal(s.text.c_str(), "");
    s = m.feed("P and more");
    assert_string_equal(s.text.c_str(), "");
    assert_true(s.stopped);
    assert_true(m.stopped());
    // After the stop nothing more comes out.
    s = m.feed("later");
    assert_true(s.stopped && s.text.empty());
    assert_string_equal(m.flush().c_str(), "");
}

// A false start ("S" then "X") is released as soon as it cannot be a stop string any more.
void false_start_is_released(void **) {
    StopStringMatcher m({"STOP"});
    assert_string_equal(m.feed("aS").text.c_str(), "a");
    assert_string_equal(m.feed("TX").text.c_str(), "STX");
    assert_int_equal(m.held_back(), 0);
}

// "ab" in "aab": the first "a" is not the stop string's start, the second one is.
void overlapping_prefix(void **) {
    StopStringMatcher m({"ab"});
    assert_string_equal(m.feed("a").text.c_str(), "");
    assert_string_equal(m.feed("a").text.c_str(), "a");
    const StopStringMatcher::Step s = m.feed("b");
    assert_true(s.stopped);
    assert_string_equal(s.text.c_str(), "");
    assert_string_equal(run({"ab"}, {"aab"}).text.c_str(), "a");
    // A self-overlapping stop string: "aab" inside "aaab".
    assert_string_equal(run({"aab"}, {"a", "a", "a", "b"}).text.c_str(), "a");
}

void several_stop_strings(void **) {
    // The one that ends first wins, even if another started earlier.
    Outcome o = run({"abcd", "c"}, {"xabcd"});
    assert_string_equal(o.text.c_str(), "xab");
    assert_int_equal(o.stop_index, 1);
    o = run({"xyz", "yz!"}, {"1xyz!"});
    assert_string_equal(o.text.c_str(), "1");
    assert_int_equal(o.stop_index, 0);
    // Same end: the one that starts first.
    o = run({"c", "bc"}, {"abc"});
    assert_string_equal(o.text.c_str(), "a");
    assert_int_equal(o.stop_index, 1);
    // Held back for whichever stop string the suffix could still become.
    StopStringMatcher m({"</s>", "\n\nUser:"});
    assert_string_equal(m.feed("Sure.\n").text.c_str(), "Sure.");
    assert_string_equal(m.feed("\nUs").text.c_str(), "");
    const StopStringMatcher::Step s = m.feed("er: hi");
    assert_true(s.stopped);
    assert_int_equal(s.stop_index, 1);
}

void flush_returns_held_back_text(void **) {
    StopStringMatcher m({"world!"});
    assert_string_equal(m.feed("hello wor").text.c_str(), "hello ");
    assert_int_equal(m.held_back(), 3);
    assert_string_equal(m.flush().c_str(), "wor");
    assert_int_equal(m.held_back(), 0);
    assert_string_equal(m.flush().c_str(), "");
}

void no_stop_strings_pass_everything(void **) {
    StopStringMatcher m({});
    assert_string_equal(m.feed("abc").text.c_str(), "abc");
    assert_int_equal(m.held_back(), 0);
}

void multibyte_stop_string(void **) {
    // "→ END" in UTF-8, cut in the middle of the arrow's three bytes.
    const std::string arrow = "\xE2\x86\x92";
    const Outcome o = run({arrow + " END"}, {"done \xE2\x86", "\x92 EN", "D!"});
    assert_string_equal(o.text.c_str(), "done ");
    assert_true(o.stopped);
}

void empty_stop_string_is_refused(void **) {
    EXPECT_INVALID_ARGUMENT(StopStringMatcher({"ok", ""}), "stop string 1 of 2 is empty");
}

// Random texts over a tiny alphabet (so matches and near misses are common), random stop
// strings, every text cut into random pieces: the outcome never depends on the cutting and
// always equals the reference.
void random_cuttings_match_reference(void **) {
    Rng rng(2024);
    auto random_string = [&](size_t max_len) {
        std::string s(1 + rng() % max_len, 'a');
        for (char &c : s) c = char('a' + rng() % 3);
        return s;
    };
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::string> stops;
        for (size_t n = 1 + rng() % 3; n > 0; --n) stops.push_back(random_string(4));
        const std::string text = random_string(20);
        const bool include = rng() % 2 == 0;
        const Outcome want = reference(stops, text, include);
        for (int cutting = 0; cutting < 5; ++cutting) {
            std::vector<std::string> pieces;
            for (size_t at = 0; at < text.size();) {
                const size_t len = cutting == 0 ? 1 : 1 + rng() % 5;  // first: byte by byte
                pieces.push_back(text.substr(at, len));
                at += len;
            }
            const Outcome got = run(stops, pieces, include);
            if (!(got == want))
                fail_msg("text \"%s\", stop[0] \"%s\": got \"%s\" (stop %zu), want \"%s\" (stop %zu)",
                         text.c_str(), stops[0].c_str(), got.text.c_str(), got.stop_index,
                         want.text.c_str(), want.stop_index);
        }
    }
}

// vLLM's min_tokens with stop strings (tests/detokenizer/test_min_tokens.py there): the text
// of the first min_tokens tokens is passed unchecked; a stop string that ends later may start
// inside it.
void unchecked_text_never_stops(void **) {
    StopStringMatcher m({"e"});
    std::string out;
    for (const char *piece : {" is", " Lee", ",", " and", " I"}) out += m.feed_unchecked(piece);
    assert_false(m.stopped());
    for (const char *piece : {"'m", " a", " stud", "ent"}) {
        const StopStringMatcher::Step step = m.feed(piece);
        out += step.text;
        if (step.stopped) break;
    }
    assert_true(m.stopped());
    assert_string_equal(out.c_str(), " is Lee, and I'm a stud");

    StopStringMatcher across({"STOP"});
    std::string text = across.feed_unchecked("xxST");
    assert_string_equal(text.c_str(), "xx");  // "ST" could begin the stop string
    const StopStringMatcher::Step step = across.feed("OPyy");
    assert_true(step.stopped);
    assert_string_equal(step.text.c_str(), "");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_inside_one_piece),
        cmocka_unit_test(stop_across_pieces),
        cmocka_unit_test(false_start_is_released),
        cmocka_unit_test(overlapping_prefix),
        cmocka_unit_test(several_stop_strings),
        cmocka_unit_test(flush_returns_held_back_text),
        cmocka_unit_test(no_stop_strings_pass_everything),
        cmocka_unit_test(multibyte_stop_string),
        cmocka_unit_test(empty_stop_string_is_refused),
        cmocka_unit_test(random_cuttings_match_reference),
        cmocka_unit_test(unchecked_text_never_stops),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
