// The logit controls (logit_bias, min_tokens, bad_words, allowed_token_ids) and the host's
// processor, through sample() and filtered_distribution(), against plain references: the
// distribution drawn from is softmax of the row the controls describe, and the reported
// log-probabilities stay those of the raw row.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "sample/logit_controls.hpp"
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

using pagoda::sample::LogitControls;
using pagoda::sample::normalize_controls;
using pagoda::sample::ProcessorStopped;
using pagoda::sample::Rng;
using pagoda::sample::RowControls;
using pagoda::sample::SampleResult;
using pagoda::sample::SamplingParams;
using pagoda::sample::TokenHistory;
using pagoda::sample::TokenProbability;
using sample_test::random_logits;
using sample_test::ref_log_softmax;
using sample_test::ref_softmax;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr size_t kVocab = 64;

SampleResult sample_with(const std::vector<float> &logits, const SamplingParams &params,
                         const TokenHistory &history, const RowControls &rc, uint64_t seed = 7) {
    std::vector<float> row = logits;
    Rng rng(seed);
    return pagoda::sample::sample(row, params, history, rng, rc);
}

// filtered_distribution() with the controls, as a vocab-sized vector of probabilities.
std::vector<double> distribution_with(const std::vector<float> &logits,
                                      const SamplingParams &params, const TokenHistory &history,
                                      const RowControls &rc) {
    std::vector<float> row = logits;
    std::vector<double> p(logits.size(), 0.0);
    for (const TokenProbability &tp :
         pagoda::sample::filtered_distribution(row, params, history, rc))
        p[size_t(tp.token)] = tp.probability;
    return p;
}

void expect_close(const std::vector<double> &got, const std::vector<double> &want) {
    for (size_t t = 0; t < want.size(); ++t)
        if (std::fabs(got[t] - want[t]) > 1e-6)
            fail_msg("token %zu: probability %.9f, reference %.9f", t, got[t], want[t]);
}

// softmax of `logits` with -inf where `masked` says, in double.
std::vector<double> ref_masked_softmax(std::vector<double> z, const std::vector<bool> &masked) {
    for (size_t i = 0; i < z.size(); ++i)
        if (masked[i]) z[i] = -INFINITY;
    return ref_softmax(z);
}

TokenHistory history_of(const std::vector<int32_t> &prompt, const std::vector<int32_t> &output) {
    TokenHistory h;
    h.add_prompt(prompt);
    for (int32_t t : output) h.add_output(t);
    return h;
}

void bias_forces_a_token(void **) {
    const std::vector<float> logits = random_logits(kVocab, 4.0f, 1);
    LogitControls c;
    c.logit_bias = {{41, 100.0f}};
    normalize_controls(c, kVocab);
    RowControls rc;
    rc.controls = &c;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.logprobs = 2;
    const SampleResult greedy_pick = sample_with(logits, greedy, {}, rc);
    assert_int_equal(greedy_pick.token, 41);
    // The log-probabilities are the raw model's, not the biased row's.
    const std::vector<double> raw = ref_log_softmax(logits);
    assert_true(std::fabs(double(greedy_pick.logprob) - raw[41]) < 1e-5);
    assert_int_equal(greedy_pick.top[0].token, sample_test::ref_ranking(logits)[0]);
    for (uint64_t seed = 0; seed < 50; ++seed)
        assert_int_equal(sample_with(logits, SamplingParams{}, {}, rc, seed).token, 41);
}

void bias_matches_reference(void **) {
    const std::vector<float> logits = random_logits(kVocab, 3.0f, 2);
    LogitControls c;
    c.logit_bias = {{5, 2.5f}, {3, -1.25f}, {60, -100.0f}};
    normalize_controls(c, kVocab);
    assert_int_equal(c.logit_bias[0].first, 3);  // sorted by token
    RowControls rc;
    rc.controls = &c;
    SamplingParams p;
    p.temperature = 0.7f;
    std::vector<double> z = sample_test::to_double(logits);
    // The bias is added in float, as the sampler does, before temperature.
    z[5] = double(logits[5] + 2.5f);
    z[3] = double(logits[3] + -1.25f);
    z[60] = double(logits[60] + -100.0f);
    expect_close(distribution_with(logits, p, {}, rc), ref_softmax(z, 0.7));
}

void allowed_ids_only(void **) {
    const std::vector<float> logits = random_logits(kVocab, 3.0f, 3);
    LogitControls c;
    c.allowed_token_ids = {17, 2, 9, 2};
    normalize_controls(c, kVocab);
    assert_int_equal(c.allowed_token_ids.size(), 3);  // sorted, each once
    RowControls rc;
    rc.controls = &c;
    std::vector<bool> masked(kVocab, true);
    for (int32_t id : {2, 9, 17}) masked[size_t(id)] = false;
    expect_close(distribution_with(logits, SamplingParams{}, {}, rc),
                 ref_masked_softmax(sample_test::to_double(logits), masked));
    for (uint64_t seed = 0; seed < 100; ++seed) {
        const int32_t t = sample_with(logits, SamplingParams{}, {}, rc, seed).token;
        assert_true(t == 2 || t == 9 || t == 17);
    }
}

void min_tokens_masks_stop_ids(void **) {
    std::vector<float> logits = random_logits(kVocab, 1.0f, 4);
    logits[1] = 50.0f;   // the end-of-sequence token, far ahead
    logits[30] = 49.0f;  // a stop id, next
    LogitControls c;
    c.min_tokens = 3;
    normalize_controls(c, kVocab);
    const std::vector<int32_t> stops = {1, 30};
    RowControls rc;
    rc.controls = &c;
    rc.min_tokens_stop_ids = stops;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    const std::vector<int32_t> prompt = {1, 30};  // the prompt does not count
    const int32_t want = sample_test::ref_ranking(logits)[2];
    assert_int_equal(sample_with(logits, greedy, history_of(prompt, {}), rc).token, want);
    assert_int_equal(sample_with(logits, greedy, history_of(prompt, {4, 5}), rc).token, want);
    assert_int_equal(sample_with(logits, greedy, history_of(prompt, {4, 5, 6}), rc).token, 1);
}

void bad_words_follow_generated_tokens(void **) {
    std::vector<float> logits(kVocab, 0.0f);
    logits[10] = 5.0f;
    logits[11] = 4.0f;
    LogitControls c;
    c.bad_words = {{7, 8, 10}, {11}};
    normalize_controls(c, kVocab);
    RowControls rc;
    rc.controls = &c;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    // {11} is always masked; 10 only right after 7, 8 were generated.
    assert_int_equal(sample_with(logits, greedy, history_of({7, 8}, {}), rc).token, 10);
    assert_int_equal(sample_with(logits, greedy, history_of({1}, {7}), rc).token, 10);
    assert_int_equal(sample_with(logits, greedy, history_of({1}, {8, 7}), rc).token, 10);
    const int32_t third = sample_test::ref_ranking(logits)[2];
    assert_int_equal(sample_with(logits, greedy, history_of({1}, {3, 7, 8}), rc).token, third);
    assert_int_equal(sample_with(logits, greedy, history_of({7}, {8}), rc).token, 10);
}

// A processor that bans token 0 and counts its calls; returns `code`.
struct Banner {
    int calls = 0;
    int32_t code = 0;
    float write = -kInf;
};

int32_t ban_zero(void *context, std::span<float> row) {
    Banner &b = *static_cast<Banner *>(context);
    ++b.calls;
    row[0] = b.write;
    return b.code;
}

void processor_runs_after_controls(void **) {
    std::vector<float> logits(kVocab, 0.0f);
    logits[0] = 9.0f;
    logits[5] = 8.0f;
    Banner banner;
    LogitControls c;
    c.logit_bias = {{5, -100.0f}};
    RowControls rc;
    rc.controls = &c;
    rc.processor = {&ban_zero, &banner};
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    const SampleResult r = sample_with(logits, greedy, {}, rc);
    assert_int_equal(banner.calls, 1);
    assert_true(r.token != 0 && r.token != 5);
    assert_true(std::fabs(double(r.logprob) - ref_log_softmax(logits)[size_t(r.token)]) < 1e-5);

    banner.code = 3;
    try {
        sample_with(logits, greedy, {}, rc);
        fail_msg("a processor returning 3 did not stop the sampler");
    } catch (const ProcessorStopped &stopped) {
        assert_int_equal(stopped.code, 3);
    }
    banner.code = 0;
    banner.write = std::numeric_limits<float>::quiet_NaN();
    EXPECT_INVALID_ARGUMENT(sample_with(logits, greedy, {}, rc), "logits processor wrote");
}

void nothing_left_is_an_error(void **) {
    const std::vector<float> logits = random_logits(kVocab, 1.0f, 5);
    LogitControls c;
    c.allowed_token_ids = {3};
    c.bad_words = {{3}};
    RowControls rc;
    rc.controls = &c;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    EXPECT_INVALID_ARGUMENT(sample_with(logits, greedy, {}, rc), "no token can be sampled");
    EXPECT_INVALID_ARGUMENT(sample_with(logits, SamplingParams{}, {}, rc),
                            "no token can be sampled");
}

void controls_keep_raw_logprobs_with_penalties(void **) {
    const std::vector<float> logits = random_logits(kVocab, 2.0f, 6);
    LogitControls c;
    c.logit_bias = {{12, 30.0f}};
    RowControls rc;
    rc.controls = &c;
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 1.7f;
    p.presence_penalty = 0.5f;
    const SampleResult r = sample_with(logits, p, history_of({12}, {12, 12}), rc);
    assert_int_equal(r.token, 12);
    assert_true(std::fabs(double(r.logprob) - ref_log_softmax(logits)[12]) < 1e-5);
}

void bad_controls_are_refused(void **) {
    auto normalized = [](LogitControls c) { normalize_controls(c, kVocab); };
    LogitControls c;
    c.logit_bias = {{64, 1.0f}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "logit_bias[0] is token 64, outside the vocabulary");
    c.logit_bias = {{3, 100.5f}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "[-100, 100]");
    c.logit_bias = {{3, std::numeric_limits<float>::quiet_NaN()}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "[-100, 100]");
    c.logit_bias = {{3, 1.0f}, {3, 2.0f}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "token 3 twice");
    c = {};
    c.min_tokens = -1;
    EXPECT_INVALID_ARGUMENT(normalized(c), "min_tokens");
    c = {};
    c.bad_words = {{1}, {}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "bad_words[1] has no tokens");
    c.bad_words = {{1, -2}};
    EXPECT_INVALID_ARGUMENT(normalized(c), "bad_words[0][1]");
    c = {};
    c.allowed_token_ids = {0, 99};
    EXPECT_INVALID_ARGUMENT(normalized(c), "allowed_token_ids[1]");
}

// Without controls the overload draws exactly as sample() does (same seed, same token).
void no_controls_change_nothing(void **) {
    const std::vector<float> logits = random_logits(kVocab, 3.0f, 8);
    LogitControls none;
    RowControls rc;
    rc.controls = &none;
    for (uint64_t seed = 0; seed < 30; ++seed) {
        std::vector<float> row = logits;
        Rng rng(seed);
        const int32_t plain = pagoda::sample::sample(row, SamplingParams{}, {}, rng).token;
        assert_int_equal(sample_with(logits, SamplingParams{}, {}, rc, seed).token, plain);
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bias_forces_a_token),
        cmocka_unit_test(bias_matches_reference),
        cmocka_unit_test(allowed_ids_only),
        cmocka_unit_test(min_tokens_masks_stop_ids),
        cmocka_unit_test(bad_words_follow_generated_tokens),
        cmocka_unit_test(processor_runs_after_controls),
        cmocka_unit_test(nothing_left_is_an_error),
        cmocka_unit_test(controls_keep_raw_logprobs_with_penalties),
        cmocka_unit_test(bad_controls_are_refused),
        cmocka_unit_test(no_controls_change_nothing),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
