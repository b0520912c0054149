// The sampler against plain references: greedy, temperature (draw frequencies), top-k, top-p,
// min-p, the three penalties, seeding, -inf masks and bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
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

using pagoda::sample::filtered_distribution;
using pagoda::sample::Rng;
using pagoda::sample::SampleResult;
using pagoda::sample::SamplingParams;
using pagoda::sample::TokenHistory;
using pagoda::sample::TokenProbability;
using sample_test::random_logits;
using sample_test::ref_ranking;
using sample_test::ref_softmax;
using sample_test::to_double;

namespace {

constexpr size_t kLlama3Vocab = 128256;
constexpr size_t kQwen2Vocab = 151936;

int32_t sample_once(const std::vector<float> &logits, const SamplingParams &params,
                    const TokenHistory &history, Rng &rng) {
    std::vector<float> row = logits;  // sample() may change its row
    return pagoda::sample::sample(row, params, history, rng).token;
}

std::vector<TokenProbability> distribution(const std::vector<float> &logits,
                                           const SamplingParams &params,
                                           const TokenHistory &history = {}) {
    std::vector<float> row = logits;
    return filtered_distribution(row, params, history);
}

std::set<int32_t> tokens_of(const std::vector<TokenProbability> &dist) {
    std::set<int32_t> s;
    for (const TokenProbability &tp : dist) s.insert(tp.token);
    return s;
}

// A 5-sigma band around the binomial mean: a correct sampler leaves it with probability ~6e-7
// per token (and the seed is fixed, so the outcome is too).
bool within_5_sigma(double count, double draws, double p) {
    const double mean = draws * p;
    const double sigma = std::sqrt(draws * p * (1.0 - p));
    return std::fabs(count - mean) <= 5.0 * sigma + 1e-9;
}

// Draws `draws` tokens and checks every token's frequency against `expected` (vocab-sized;
// tokens with probability 0 must never come up).
void check_frequencies(const std::vector<float> &logits, const SamplingParams &params,
                       const std::vector<double> &expected, size_t draws, uint64_t seed) {
    Rng rng(seed);
    TokenHistory history;
    std::vector<double> counts(logits.size(), 0.0);
    for (size_t i = 0; i < draws; ++i) counts[size_t(sample_once(logits, params, history, rng))]++;
    for (size_t t = 0; t < logits.size(); ++t) {
        if (expected[t] == 0.0) {
            if (counts[t] != 0) fail_msg("token %zu has probability 0 but came up %.0f times", t, counts[t]);
            continue;
        }
        if (!within_5_sigma(counts[t], double(draws), expected[t]))
            fail_msg("token %zu came up %.0f times in %zu draws; expected %.1f", t, counts[t], draws,
                     double(draws) * expected[t]);
    }
}

// The reference filters on a probability vector, each as its paper states it.
std::vector<double> ref_top_k(std::vector<double> p, size_t k) {
    const std::vector<int32_t> rank = ref_ranking(p);
    for (size_t i = k; i < rank.size(); ++i) p[size_t(rank[i])] = 0.0;
    return p;
}

std::vector<double> normalised(std::vector<double> p) {
    double sum = 0.0;
    for (double x : p) sum += x;
    for (double &x : p) x /= sum;
    return p;
}

// Keeps the smallest most-likely-first prefix whose (normalised) mass reaches top_p. Fails the
// test if the boundary is within 1e-6 of top_p, where the sampler's float weights and this
// double reference could honestly disagree about the last token.
std::vector<double> ref_top_p(std::vector<double> p, double top_p) {
    p = normalised(p);
    const std::vector<int32_t> rank = ref_ranking(p);
    double mass = 0.0;
    size_t keep = 0;
    while (keep < rank.size() && mass < top_p) mass += p[size_t(rank[keep++])];
    if (std::fabs(mass - top_p) < 1e-6 ||
        std::fabs(mass - p[size_t(rank[keep - 1])] - top_p) < 1e-6)
        fail_msg("reference nucleus boundary too close to top_p = %.9g", top_p);
    for (size_t i = keep; i < rank.size(); ++i) p[size_t(rank[i])] = 0.0;
    return p;
}

// A top_p near `about` that sits halfway between two cumulative masses of `p`, so the nucleus
// is unambiguous. In a 150k vocabulary the tokens at the boundary have probabilities near 1e-5,
// and a round top_p would often fall within rounding distance of one of them.
float top_p_between(std::vector<double> p, double about) {
    p = normalised(p);
    const std::vector<int32_t> rank = ref_ranking(p);
    double mass = 0.0;
    size_t keep = 0;
    while (keep < rank.size() && mass < about) mass += p[size_t(rank[keep++])];
    return float(mass - 0.5 * p[size_t(rank[keep - 1])]);
}

std::vector<double> ref_min_p(std::vector<double> p, double min_p) {
    const double max = *std::max_element(p.begin(), p.end());
    for (double &x : p)
        if (x < min_p * max) x = 0.0;
    return p;
}

// The filtered distribution equals `expected` (vocab-sized, any scale): the same tokens, and
// each probability within 1e-6 of the normalised reference.
void check_distribution(const std::vector<TokenProbability> &dist, std::vector<double> expected) {
    expected = normalised(expected);
    size_t expected_count = 0;
    for (double x : expected) expected_count += x > 0.0;
    if (dist.size() != expected_count)
        fail_msg("sampler keeps %zu tokens, reference %zu", dist.size(), expected_count);
    for (const TokenProbability &tp : dist) {
        if (tp.token < 0 || size_t(tp.token) >= expected.size() || expected[size_t(tp.token)] == 0.0)
            fail_msg("sampler keeps token %d, which the reference drops", tp.token);
        if (std::fabs(tp.probability - expected[size_t(tp.token)]) > 1e-6)
            fail_msg("token %d: probability %.9f, reference %.9f", tp.token, tp.probability,
                     expected[size_t(tp.token)]);
    }
}

// --- greedy -----------------------------------------------------------------------------------

void greedy_picks_argmax(void **) {
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.top_k = 3;  // ignored by greedy: cannot change the argmax
    TokenHistory none;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        const std::vector<float> logits = random_logits(kLlama3Vocab, 8.0f, seed);
        const int32_t want = ref_ranking(logits)[0];
        Rng rng(seed), untouched(seed);
        assert_int_equal(sample_once(logits, greedy, none, rng), want);
        assert_true(rng == untouched);  // greedy consumes no randomness
    }
}

void greedy_ties_go_to_lowest_id(void **) {
    std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f, 1.9f};
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    Rng rng(7);
    for (int i = 0; i < 5; ++i) assert_int_equal(sample_once(logits, greedy, {}, rng), 1);
    const std::vector<TokenProbability> dist = distribution(logits, greedy);
    assert_int_equal(dist.size(), 1);
    assert_int_equal(dist[0].token, 1);
}

// Greedy sees the penalised logits (vLLM applies penalties before the argmax).
void greedy_after_repetition_penalty(void **) {
    std::vector<float> logits = {1.0f, 3.0f, 2.5f, 0.0f};
    TokenHistory history;
    history.add_output(1);
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 1.5f;  // 3.0 -> 2.0 < 2.5
    Rng rng(1);
    assert_int_equal(sample_once(logits, p, history, rng), 2);
}

// --- temperature ------------------------------------------------------------------------------

void temperature_frequencies_match_softmax(void **) {
    const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f, -2.0f, 0.7f};
    const size_t draws = 200000;
    for (const double temperature : {0.7, 1.0, 2.5}) {
        SamplingParams p;
        p.temperature = float(temperature);
        const std::vector<double> expected = ref_softmax(to_double(logits), temperature);
        // The bands have power: the same draws could not pass for temperature 1.3x off.
        const std::vector<double> wrong = ref_softmax(to_double(logits), temperature * 1.3);
        bool wrong_would_fail = false;
        for (size_t t = 0; t < logits.size(); ++t)
            wrong_would_fail |= !within_5_sigma(double(draws) * expected[t], double(draws), wrong[t]);
        assert_true(wrong_would_fail);
        check_frequencies(logits, p, expected, draws, 1234);
        check_distribution(distribution(logits, p), expected);
    }
}

void tiny_temperature_is_nearly_greedy(void **) {
    const std::vector<float> logits = random_logits(1000, 4.0f, 3);
    SamplingParams p;
    p.temperature = 1e-4f;
    Rng rng(9);
    const int32_t best = ref_ranking(logits)[0];
    for (int i = 0; i < 100; ++i) assert_int_equal(sample_once(logits, p, {}, rng), best);
}

// -inf logits (a grammar's mask) are never drawn, and do not disturb the others' probabilities.
void masked_tokens_never_drawn(void **) {
    std::vector<float> logits = {0.3f, -INFINITY, 1.0f, -INFINITY, -0.4f, 0.9f};
    SamplingParams p;
    std::vector<double> z = to_double(logits);
    check_frequencies(logits, p, ref_softmax(z), 50000, 77);
}

// --- top-k ------------------------------------------------------------------------------------

void top_k_keeps_only_the_k_best(void **) {
    const std::vector<float> logits = random_logits(1000, 3.0f, 11);
    SamplingParams p;
    p.temperature = 1.5f;
    p.top_k = 5;
    const std::vector<double> expected = ref_top_k(ref_softmax(to_double(logits), 1.5), 5);
    check_distribution(distribution(logits, p), expected);
    check_frequencies(logits, p, normalised(expected), 50000, 5);
}

// Both selection paths (bounded heap for small k, nth_element for large) at real vocab sizes.
void top_k_at_vocab_scale(void **) {
    for (const size_t vocab : {kLlama3Vocab, kQwen2Vocab}) {
        const std::vector<float> logits = random_logits(vocab, 5.0f, vocab);
        for (const int32_t k : {1, 40, 1000, 20000, 100000}) {
            SamplingParams p;
            p.top_k = k;
            check_distribution(distribution(logits, p),
                               ref_top_k(ref_softmax(to_double(logits)), size_t(k)));
            Rng rng{uint64_t(k)};
            const std::set<int32_t> allowed = [&] {
                const std::vector<int32_t> rank = ref_ranking(logits);
                return std::set<int32_t>(rank.begin(), rank.begin() + k);
            }();
            for (int i = 0; i < 50; ++i)
                assert_true(allowed.count(sample_once(logits, p, {}, rng)) == 1);
        }
    }
}

// Equal logits straddling the k-th place: exactly k survive, the lowest ids among the ties.
void top_k_ties_keep_lowest_ids(void **) {
    const std::vector<float> logits = {1.0f, 2.0f, 1.0f, 3.0f, 1.0f, 1.0f, 0.5f};
    SamplingParams p;
    p.top_k = 4;  // 3.0 (id 3), 2.0 (id 1), then two of the four 1.0s: ids 0 and 2
    assert_true(tokens_of(distribution(logits, p)) == std::set<int32_t>({0, 1, 2, 3}));
    // With a big enough row the bounded-heap path runs; same rule.
    std::vector<float> flat(4096, 0.25f);
    flat[100] = 1.0f;
    p.top_k = 3;
    assert_true(tokens_of(distribution(flat, p)) == std::set<int32_t>({0, 1, 100}));
}

// --- top-p ------------------------------------------------------------------------------------

void top_p_keeps_the_nucleus(void **) {
    const std::vector<float> logits = random_logits(1000, 4.0f, 21);
    for (const double top_p : {0.3, 0.77, 0.9}) {
        SamplingParams p;
        p.temperature = 0.8f;
        p.top_p = float(top_p);
        const std::vector<double> expected =
            ref_top_p(ref_softmax(to_double(logits), 0.8), double(p.top_p));
        check_distribution(distribution(logits, p), expected);
    }
    SamplingParams p;
    p.temperature = 0.8f;
    p.top_p = 0.5f;
    check_frequencies(logits, p, normalised(ref_top_p(ref_softmax(to_double(logits), 0.8), 0.5)),
                      50000, 8);
}

void top_p_at_vocab_scale(void **) {
    const std::vector<float> logits = random_logits(kQwen2Vocab, 6.0f, 31);
    const std::vector<double> probs = ref_softmax(to_double(logits));
    for (const double about : {0.2, 0.6, 0.95}) {
        SamplingParams p;
        p.top_p = top_p_between(probs, about);
        check_distribution(distribution(logits, p), ref_top_p(probs, double(p.top_p)));
    }
}

// Always at least one token, however small top_p.
void top_p_never_empty(void **) {
    const std::vector<float> logits = random_logits(5000, 2.0f, 41);
    SamplingParams p;
    p.top_p = 1e-7f;
    const std::vector<TokenProbability> dist = distribution(logits, p);
    assert_int_equal(dist.size(), 1);
    assert_int_equal(dist[0].token, ref_ranking(logits)[0]);
    assert_true(dist[0].probability == 1.0);
}

// top-p applies to the top-k-renormalised distribution (vLLM's order).
void top_k_then_top_p(void **) {
    const std::vector<float> logits = random_logits(3000, 3.0f, 51);
    SamplingParams p;
    p.temperature = 1.2f;
    p.top_k = 50;
    p.top_p = 0.6f;
    const std::vector<double> expected =
        ref_top_p(ref_top_k(ref_softmax(to_double(logits), 1.2), 50), double(p.top_p));
    check_distribution(distribution(logits, p), expected);
}

// --- min-p ------------------------------------------------------------------------------------

void min_p_drops_unlikely_tokens(void **) {
    const std::vector<float> logits = random_logits(2000, 5.0f, 61);
    for (const double min_p : {0.01, 0.1, 0.5, 1.0}) {
        SamplingParams p;
        p.temperature = 1.3f;
        p.min_p = float(min_p);
        check_distribution(distribution(logits, p),
                           ref_min_p(ref_softmax(to_double(logits), 1.3), double(p.min_p)));
    }
    SamplingParams p;
    p.min_p = 0.2f;
    check_frequencies(logits, p, normalised(ref_min_p(ref_softmax(to_double(logits)), 0.2)),
                      50000, 12);
}

// All three filters, in order top-k, top-p, min-p; with and without top-k (the two top-p paths).
void all_filters_together(void **) {
    const std::vector<float> logits = random_logits(kLlama3Vocab, 7.0f, 71);
    for (const int32_t top_k : {0, 500}) {
        SamplingParams p;
        p.temperature = 0.9f;
        p.top_k = top_k;
        p.min_p = 0.02f;
        std::vector<double> expected = ref_softmax(to_double(logits), 0.9);
        if (top_k > 0) expected = ref_top_k(expected, size_t(top_k));
        p.top_p = top_p_between(expected, 0.85);
        expected = ref_min_p(ref_top_p(expected, double(p.top_p)), double(p.min_p));
        check_distribution(distribution(logits, p), expected);
    }
}

// --- penalties --------------------------------------------------------------------------------

// The penalties written out as vLLM documents them, one token at a time over the whole vocab.
std::vector<double> ref_penalised(const std::vector<float> &logits, const SamplingParams &p,
                                  const std::vector<int32_t> &prompt,
                                  const std::vector<int32_t> &output) {
    std::vector<double> out(logits.size());
    for (size_t t = 0; t < logits.size(); ++t) {
        const auto id = int32_t(t);
        const bool in_prompt = std::count(prompt.begin(), prompt.end(), id) > 0;
        const auto count = double(std::count(output.begin(), output.end(), id));
        double x = logits[t];
        if (in_prompt || count > 0) x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
        x -= double(p.presence_penalty) * (count > 0 ? 1.0 : 0.0) + double(p.frequency_penalty) * count;
        out[t] = x;
    }
    return out;
}

void penalties_match_reference(void **) {
    const std::vector<float> logits = random_logits(64, 3.0f, 81);
    const std::vector<int32_t> prompt = {1, 2, 3, 3, 40, 63, 2};
    const std::vector<int32_t> output = {3, 5, 5, 5, 7, 1, 50, 5};
    TokenHistory history;
    history.add_prompt(prompt);
    for (int32_t id : output) history.add_output(id);

    struct Case {
        float repetition, presence, frequency;
    };
    for (const Case c : {Case{1.3f, 0, 0}, Case{0.8f, 0, 0}, Case{1, 0.7f, 0}, Case{1, 0, 0.45f},
                         Case{1, -0.5f, -0.2f}, Case{1.25f, 0.4f, 0.3f}}) {
        SamplingParams p;
        p.temperature = 0.9f;
        p.repetition_penalty = c.repetition;
        p.presence_penalty = c.presence;
        p.frequency_penalty = c.frequency;
        const std::vector<double> expected = ref_softmax(ref_penalised(logits, p, prompt, output), 0.9);
        check_distribution(distribution(logits, p, history), expected);
    }
}

// The reported log-probability stays the raw model's even when a penalty moved the logit.
void penalties_leave_logprobs_raw(void **) {
    const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.0f};
    TokenHistory history;
    history.add_prompt(std::vector<int32_t>{0, 1});
    history.add_output(0);
    history.add_output(0);
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 2.0f;
    p.frequency_penalty = 1.0f;  // token 0: 2.0 -> 1.0 -> -1.0: token 3 wins
    p.logprobs = 2;
    std::vector<float> row = logits;
    Rng rng(1);
    const SampleResult r = pagoda::sample::sample(row, p, history, rng);
    const std::vector<double> ref = sample_test::ref_log_softmax(logits);
    assert_int_equal(r.token, 3);
    assert_true(std::fabs(r.logprob - ref[3]) <= 1e-6);
    assert_int_equal(r.top.size(), 2);
    assert_int_equal(r.top[0].token, 0);  // the raw favourite, though penalised away
    assert_true(std::fabs(r.top[0].logprob - ref[0]) <= 1e-6);

    // The chosen token itself penalised: its raw logit is reported, not the penalised one.
    p.temperature = 0.0f;
    p.frequency_penalty = 0.0f;
    p.repetition_penalty = 1.5f;  // token 0: 2.0 -> 1.33, still the best
    row = logits;
    const SampleResult r0 = pagoda::sample::sample(row, p, history, rng);
    assert_int_equal(r0.token, 0);
    assert_true(std::fabs(r0.logprob - ref[0]) <= 1e-6);
}

// --- seeding ----------------------------------------------------------------------------------

std::vector<int32_t> sequence(uint64_t seed, const SamplingParams &p, size_t n) {
    const std::vector<float> logits = random_logits(1000, 1.0f, 91);
    Rng rng(seed);
    std::vector<int32_t> out;
    for (size_t i = 0; i < n; ++i) out.push_back(sample_once(logits, p, {}, rng));
    return out;
}

void same_seed_same_sequence(void **) {
    for (const int32_t top_k : {0, 50}) {
        SamplingParams p;
        p.top_k = top_k;
        p.top_p = 0.9f;
        assert_true(sequence(42, p, 500) == sequence(42, p, 500));
        assert_true(sequence(42, p, 500) != sequence(43, p, 500));
    }
}

// --- bad input --------------------------------------------------------------------------------

void bad_params_are_named(void **) {
    std::vector<float> logits = {0.0f, 1.0f};
    TokenHistory none;
    Rng rng(1);
    auto call = [&](SamplingParams p) { pagoda::sample::sample(logits, p, none, rng); };
    SamplingParams p;
    p.temperature = -0.5f;
    EXPECT_INVALID_ARGUMENT(call(p), "temperature");
    p = {};
    p.temperature = NAN;
    EXPECT_INVALID_ARGUMENT(call(p), "temperature");
    p = {};
    p.top_p = 0.0f;
    EXPECT_INVALID_ARGUMENT(call(p), "top_p");
    p = {};
    p.top_p = 1.5f;
    EXPECT_INVALID_ARGUMENT(call(p), "top_p");
    p = {};
    p.min_p = -0.1f;
    EXPECT_INVALID_ARGUMENT(call(p), "min_p");
    p = {};
    p.repetition_penalty = 0.0f;
    EXPECT_INVALID_ARGUMENT(call(p), "repetition_penalty");
    p = {};
    p.presence_penalty = INFINITY;
    EXPECT_INVALID_ARGUMENT(call(p), "presence_penalty");
    p = {};
    p.frequency_penalty = NAN;
    EXPECT_INVALID_ARGUMENT(call(p), "frequency_penalty");
    p = {};
    p.logprobs = -2;
    EXPECT_INVALID_ARGUMENT(call(p), "logprobs");
}

void bad_logits_are_named(void **) {
    TokenHistory none;
    Rng rng(1);
    SamplingParams p;
    std::vector<float> nan_row = {0.0f, 1.0f, 2.0f, NAN};
    EXPECT_INVALID_ARGUMENT(pagoda::sample::sample(nan_row, p, none, rng), "logits[3] is NaN");
    std::vector<float> inf_row = {INFINITY, 1.0f};
    EXPECT_INVALID_ARGUMENT(pagoda::sample::sample(inf_row, p, none, rng), "logits[0] is +inf");
    std::vector<float> masked = {-INFINITY, -INFINITY};
    EXPECT_INVALID_ARGUMENT(pagoda::sample::sample(masked, p, none, rng), "-inf");
    std::vector<float> empty;
    EXPECT_INVALID_ARGUMENT(pagoda::sample::sample(empty, p, none, rng), "empty");

    // A history token beyond the row, which only matters when a penalty reads it.
    TokenHistory history;
    history.add_output(7);
    std::vector<float> row = {0.0f, 1.0f};
    p.presence_penalty = 0.5f;
    EXPECT_INVALID_ARGUMENT(pagoda::sample::sample(row, p, history, rng), "token 7");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_picks_argmax),
        cmocka_unit_test(greedy_ties_go_to_lowest_id),
        cmocka_unit_test(greedy_after_repetition_penalty),
        cmocka_unit_test(temperature_frequencies_match_softmax),
        cmocka_unit_test(tiny_temperature_is_nearly_greedy),
        cmocka_unit_test(masked_tokens_never_drawn),
        cmocka_unit_test(top_k_keeps_only_the_k_best),
        cmocka_unit_test(top_k_at_vocab_scale),
        cmocka_unit_test(top_k_ties_keep_lowest_ids),
        cmocka_unit_test(top_p_keeps_the_nucleus),
        cmocka_unit_test(top_p_at_vocab_scale),
        cmocka_unit_test(top_p_never_empty),
        cmocka_unit_test(top_k_then_top_p),
        cmocka_unit_test(min_p_drops_unlikely_tokens),
        cmocka_unit_test(all_filters_together),
        cmocka_unit_test(penalties_match_reference),
        cmocka_unit_test(penalties_leave_logprobs_raw),
        cmocka_unit_test(same_seed_same_sequence),
        cmocka_unit_test(bad_params_are_named),
        cmocka_unit_test(bad_logits_are_named),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
