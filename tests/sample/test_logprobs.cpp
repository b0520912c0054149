// Log-probabilities against a double-precision log_softmax: single tokens, the top-n, what
// sample() reports, extreme rows, and bad input.
#include <cmath>
#include <cstdio>
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
using pagoda::sample::SampleResult;
using pagoda::sample::SamplingParams;
using pagoda::sample::TokenHistory;
using pagoda::sample::TokenLogprob;
using pagoda::sample::token_logprob;
using pagoda::sample::top_logprobs;
using sample_test::random_logits;
using sample_test::ref_log_softmax;
using sample_test::ref_ranking;

namespace {

constexpr double kTolerance = 1e-5;

// `top` is the reference's first top.size() tokens, in order, each within kTolerance.
void check_top(const std::vector<TokenLogprob> &top, const std::vector<float> &logits) {
    const std::vector<double> ref = ref_log_softmax(logits);
    const std::vector<int32_t> rank = ref_ranking(logits);
    for (size_t i = 0; i < top.size(); ++i) {
        if (top[i].token != rank[i])
            fail_msg("top[%zu] is token %d, reference %d", i, top[i].token, rank[i]);
        if (!(std::fabs(double(top[i].logprob) - ref[size_t(rank[i])]) <= kTolerance))
            fail_msg("top[%zu] (token %d): %.9f, reference %.9f", i, top[i].token,
                     double(top[i].logprob), ref[size_t(rank[i])]);
    }
}

void every_token_matches_reference(void **) {
    for (const float scale : {1.0f, 10.0f, 30.0f}) {
        const std::vector<float> logits = random_logits(32000, scale, uint64_t(scale));
        const std::vector<double> ref = ref_log_softmax(logits);
        // token_logprob recomputes the normaliser each call; a stride keeps this quick.
        for (size_t t = 0; t < logits.size(); t += 97) {
            const double got = token_logprob(logits, int32_t(t));
            if (!(std::fabs(got - ref[t]) <= kTolerance))
                fail_msg("scale %g token %zu: %.9f, reference %.9f", double(scale), t, got, ref[t]);
        }
    }
}

void top_n_matches_reference(void **) {
    const std::vector<float> logits = random_logits(151936, 12.0f, 5);
    for (const int32_t n : {1, 5, 20}) {
        const std::vector<TokenLogprob> top = top_logprobs(logits, n);
        assert_int_equal(top.size(), size_t(n));
        check_top(top, logits);
    }
    // Larger than the heap's sweet spot (nth_element path), and more than the vocabulary.
    const std::vector<float> small = random_logits(100, 3.0f, 6);
    const std::vector<TokenLogprob> half = top_logprobs(small, 60);
    assert_int_equal(half.size(), 60);
    check_top(half, small);
    const std::vector<TokenLogprob> all = top_logprobs(small, 1000);
    assert_int_equal(all.size(), 100);
    check_top(all, small);
    assert_true(top_logprobs(small, 0).empty());
}

void ties_list_lower_id_first(void **) {
    const std::vector<float> logits = {0.0f, 1.0f, 1.0f, -1.0f, 1.0f};
    const std::vector<TokenLogprob> top = top_logprobs(logits, 4);
    assert_int_equal(top[0].token, 1);
    assert_int_equal(top[1].token, 2);
    assert_int_equal(top[2].token, 4);
    assert_int_equal(top[3].token, 0);
    assert_true(top[0].logprob == top[1].logprob && top[1].logprob == top[2].logprob);
}

// Huge logits would overflow exp() without the max subtraction; -inf entries are impossible
// tokens (log-probability -inf) that must not disturb the rest.
void extreme_rows_are_stable(void **) {
    const std::vector<float> big = {1e4f, 1e4f - 1.0f, -1e4f, 9990.0f};
    const std::vector<double> ref = ref_log_softmax(big);
    for (size_t t = 0; t < big.size(); ++t) {
        const double got = token_logprob(big, int32_t(t));
        assert_true(std::isfinite(got));
        // A float result near -20000 is itself only good to ~1e-3: allow its rounding.
        assert_true(std::fabs(got - ref[t]) <= kTolerance + std::fabs(ref[t]) * 1.2e-7);
    }
    const std::vector<float> masked = {-INFINITY, 0.0f, -INFINITY, 0.0f};
    assert_true(std::fabs(token_logprob(masked, 1) - std::log(0.5)) <= kTolerance);
    assert_true(std::isinf(token_logprob(masked, 0)) && token_logprob(masked, 0) < 0);
    const std::vector<TokenLogprob> top = top_logprobs(masked, 4);
    assert_int_equal(top[0].token, 1);
    assert_int_equal(top[1].token, 3);
    assert_true(std::isinf(top[3].logprob));
}

// sample() reports the raw model's numbers whatever temperature, top-k and penalties did.
void sample_reports_raw_logprobs(void **) {
    const std::vector<float> logits = random_logits(128256, 8.0f, 9);
    const std::vector<double> ref = ref_log_softmax(logits);
    TokenHistory history;
    history.add_prompt(std::vector<int32_t>{ref_ranking(logits)[0], 17, 99});
    history.add_output(17);
    SamplingParams p;
    p.temperature = 0.6f;
    p.top_k = 30;
    p.top_p = 0.9f;
    p.repetition_penalty = 1.2f;
    p.presence_penalty = 0.3f;
    p.logprobs = 5;
    Rng rng(3);
    for (int i = 0; i < 20; ++i) {
        std::vector<float> row = logits;
        const SampleResult r = pagoda::sample::sample(row, p, history, rng);
        assert_true(std::fabs(double(r.logprob) - ref[size_t(r.token)]) <= kTolerance);
        assert_int_equal(r.top.size(), 5);
        check_top(r.top, logits);
    }
    // logprobs = 0: the chosen token's value only; -1: none asked for, still the chosen one.
    for (const int32_t n : {0, -1}) {
        p.logprobs = n;
        std::vector<float> row = logits;
        const SampleResult r = pagoda::sample::sample(row, p, history, rng);
        assert_true(r.top.empty());
        assert_true(std::fabs(double(r.logprob) - ref[size_t(r.token)]) <= kTolerance);
    }
}

void bad_input_is_named(void **) {
    const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
    EXPECT_INVALID_ARGUMENT(token_logprob(logits, 3), "token 3");
    EXPECT_INVALID_ARGUMENT(token_logprob(logits, -1), "token -1");
    EXPECT_INVALID_ARGUMENT(top_logprobs(logits, -2), "n = -2");
    const std::vector<float> nan_row = {0.0f, NAN};
    EXPECT_INVALID_ARGUMENT(token_logprob(nan_row, 0), "logits[1] is NaN");
    EXPECT_INVALID_ARGUMENT(top_logprobs(std::vector<float>{}, 1), "empty");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_token_matches_reference),
        cmocka_unit_test(top_n_matches_reference),
        cmocka_unit_test(ties_list_lower_id_first),
        cmocka_unit_test(extreme_rows_are_stable),
        cmocka_unit_test(sample_reports_raw_logprobs),
        cmocka_unit_test(bad_input_is_named),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
