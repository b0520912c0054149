// TokenHistory: the distinct tokens and output counts the penalties walk, kept in step with the
// prompt and output as a reference recount would give them.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "sample/sampler.hpp"
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
using pagoda::sample::TokenCount;
using pagoda::sample::TokenHistory;

namespace {

// Recounts from prompt() and output() and compares with the incremental bookkeeping. The
// seen order interleaves prompt pieces and outputs as they came, which prompt() and output()
// alone do not record, so seen tokens are compared as a set (exact order: checked below).
void check_against_recount(const TokenHistory &h) {
    std::set<int32_t> seen(h.prompt().begin(), h.prompt().end());
    std::map<int32_t, uint32_t> counts;
    std::vector<int32_t> output_order;
    for (int32_t id : h.output()) {
        seen.insert(id);
        if (counts[id]++ == 0) output_order.push_back(id);
    }
    const std::vector<int32_t> got(h.seen_tokens().begin(), h.seen_tokens().end());
    assert_int_equal(got.size(), seen.size());  // distinct...
    assert_true(std::set<int32_t>(got.begin(), got.end()) == seen);  // ...and the same tokens
    for (size_t i = 0; i < got.size(); ++i) {
        assert_true(h.has_seen(got[i]));
        assert_int_equal(h.seen_position(got[i]), int64_t(i));
    }
    assert_int_equal(h.output_counts().size(), output_order.size());
    for (size_t i = 0; i < output_order.size(); ++i) {
        const TokenCount tc = h.output_counts()[i];
        assert_int_equal(tc.token, output_order[i]);
        assert_int_equal(tc.count, counts[tc.token]);
        assert_int_equal(h.output_count(tc.token), counts[tc.token]);
    }
}

void counts_follow_prompt_and_output(void **) {
    TokenHistory h;
    h.add_prompt(std::vector<int32_t>{5, 9, 5, 0});
    h.add_output(9);
    h.add_output(12);
    h.add_output(9);
    h.add_output(5);
    check_against_recount(h);
    assert_int_equal(h.output_count(9), 2);
    assert_int_equal(h.output_count(0), 0);  // prompt only
    assert_false(h.has_seen(3));
    assert_int_equal(h.seen_position(3), -1);
    assert_true(std::vector<int32_t>(h.seen_tokens().begin(), h.seen_tokens().end()) ==
                std::vector<int32_t>({5, 9, 0, 12}));  // in the order first seen

    // Longer random use, with prompt pieces added between outputs (chunked prefill).
    Rng rng(4);
    for (int i = 0; i < 2000; ++i) {
        const auto id = int32_t(rng() % 300);
        if (i % 100 == 0)
            h.add_prompt(std::vector<int32_t>{id, id + 1});
        else
            h.add_output(id);
    }
    check_against_recount(h);
}

void clear_forgets_everything(void **) {
    TokenHistory h;
    h.add_prompt(std::vector<int32_t>{1, 2});
    h.add_output(3);
    h.clear();
    assert_true(h.prompt().empty() && h.output().empty() && h.seen_tokens().empty() &&
                h.output_counts().empty());
    assert_false(h.has_seen(1));
    h.add_output(1);
    check_against_recount(h);
}

// A negative id is refused and leaves the history as it was.
void negative_ids_are_refused(void **) {
    TokenHistory h;
    h.add_prompt(std::vector<int32_t>{4});
    EXPECT_INVALID_ARGUMENT(h.add_prompt(std::vector<int32_t>{1, -3}), "prompt token id -3");
    EXPECT_INVALID_ARGUMENT(h.add_output(-1), "output token id -1");
    assert_int_equal(h.prompt().size(), 1);
    assert_true(h.output().empty());
    check_against_recount(h);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_follow_prompt_and_output),
        cmocka_unit_test(clear_forgets_everything),
        cmocka_unit_test(negative_ids_are_refused),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
