// TeraPipe token slicing: the DP (Eq. 6–8 with the t_max enumeration, the early stop and the ε
// skip) against brute force over every composition of L/g, for random costs of TeraPipe's form
// t(l, c) = t(l, 0) + a0 + a1·l + a2·c + a3·l·c with a flat region below a knee (Fig. 3).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "plan/terapipe_slicing.hpp"

#include "plan_test_support.hpp"

using namespace pagoda::plan;

namespace {

// A random cost of TeraPipe's shape: flat up to a knee, then linear in l (Fig. 3), plus the
// context term of Eq. 9; sometimes with noise so ties and non-monotone costs are exercised.
SliceCostFn random_cost(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double floor_s = 0.5 + u(rng), per_token = 0.01 + 0.1 * u(rng);
    const double knee = 1 + 40 * u(rng);
    const double a0 = u(rng) * 0.2, a1 = u(rng) * 0.01, a2 = u(rng) * 0.01, a3 = u(rng) * 0.002;
    const bool noisy = seed % 3 == 0;
    const unsigned noise_seed = seed * 7919u;
    return [=](int64_t l, int64_t c) {
        double t = floor_s + per_token * std::max(0.0, double(l) - knee) + a0 + a1 * double(l) +
                   a2 * double(c) + a3 * double(l) * double(c);
        if (noisy) {  // a deterministic function of (l, c), as a measured table would be
            std::mt19937 r(noise_seed ^ unsigned(l * 131 + c));
            t *= 1.0 + 0.2 * std::uniform_real_distribution<double>(-1, 1)(r);
        }
        return t;
    };
}

// The optimum of Eq. 5 over every composition of the prompt into multiples of g.
double brute_force(const SliceCostFn &cost, int32_t stages, int64_t units, int64_t g) {
    double best = std::numeric_limits<double>::infinity();
    // Bit i of `cuts` set = a slice boundary after unit i+1.
    for (uint64_t cuts = 0; cuts < (uint64_t(1) << (units - 1)); ++cuts) {
        std::vector<int64_t> lengths;
        int64_t start = 0;
        for (int64_t i = 1; i <= units; ++i)
            if (i == units || (cuts >> (i - 1)) & 1) {
                lengths.push_back((i - start) * g);
                start = i;
            }
        best = std::min(best, evaluate_slicing(cost, stages, lengths).latency_seconds);
    }
    return best;
}

void test_matches_brute_force(void **) {
    int checked = 0;
    for (unsigned seed = 1; seed <= 60; ++seed) {
        const SliceCostFn cost = random_cost(seed);
        for (int32_t stages : {1, 2, 3, 8, 48}) {
            const int64_t g = seed % 2 == 0 ? 8 : 1;
            const int64_t units = 1 + int64_t(seed % 14);
            SlicingOptions o;
            o.stages = stages;
            o.granularity = g;
            o.prompt_tokens = units * g;
            const Slicing dp = plan_token_slices(cost, o);
            const double want = brute_force(cost, stages, units, g);
            if (std::fabs(dp.latency_seconds - want) > 1e-9 * want)
                fail_msg("seed %u K=%d L=%lld: DP %.12f, brute force %.12f", seed, stages,
                         (long long)o.prompt_tokens, dp.latency_seconds, want);
            // The slices are what the DP says they cost, and cover the prompt in multiples of g.
            int64_t sum = 0;
            for (int64_t l : dp.lengths) {
                assert_true(l > 0 && l % g == 0);
                sum += l;
            }
            assert_int_equal(sum, o.prompt_tokens);
            assert_true(std::fabs(evaluate_slicing(cost, stages, dp.lengths).latency_seconds -
                                  dp.latency_seconds) < 1e-12);
            ++checked;
        }
    }
    assert_int_equal(checked, 300);
}

// With ε > 0 the answer may be worse, but by at most K·ε (TeraPipe §3.3).
void test_epsilon_bound(void **) {
    for (unsigned seed = 100; seed < 130; ++seed) {
        const SliceCostFn cost = random_cost(seed);
        SlicingOptions o;
        o.stages = 6;
        o.granularity = 1;
        o.prompt_tokens = 64;
        const Slicing exact = plan_token_slices(cost, o);
        o.epsilon_seconds = 0.05;
        const Slicing thinned = plan_token_slices(cost, o);
        assert_true(thinned.latency_seconds >= exact.latency_seconds - 1e-12);
        assert_true(thinned.latency_seconds <= exact.latency_seconds + 6 * 0.05 + 1e-12);
        assert_true(thinned.candidates_evaluated <= exact.candidates_evaluated);
    }
}

// A cost that grows with context makes later slices dearer; the optimum then uses longer
// slices first (TeraPipe §3.2, Tab. 4), and beats uniform slicing.
void test_longer_slices_first(void **) {
    const SliceCostFn cost = [](int64_t l, int64_t c) {
        return 1e-3 + 1e-5 * double(l) + 2e-8 * double(l) * double(c);
    };
    SlicingOptions o;
    o.stages = 16;
    o.granularity = 8;
    o.prompt_tokens = 2048;
    const Slicing dp = plan_token_slices(cost, o);
    const Slicing uniform = best_uniform_slicing(cost, o);
    assert_true(dp.lengths.size() > 2);
    assert_true(dp.lengths.front() > dp.lengths.back());
    assert_true(dp.latency_seconds < uniform.latency_seconds);
    // The uniform baseline is the best of its kind: every equal split is no better.
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
        const std::vector<int64_t> lengths(size_t(m), 2048 / m);
        assert_true(evaluate_slicing(cost, 16, lengths).latency_seconds >= uniform.latency_seconds);
    }
}

// With one stage nothing is gained by pipelining: Eq. 5 is Σ t_i, and a cost with a fixed
// part per slice makes one slice best.
void test_single_stage_one_slice(void **) {
    const SliceCostFn cost = [](int64_t l, int64_t c) { return 1.0 + double(l) + 0.001 * double(c); };
    SlicingOptions o;
    o.stages = 1;
    o.granularity = 4;
    o.prompt_tokens = 64;
    const Slicing dp = plan_token_slices(cost, o);
    assert_int_equal(dp.lengths.size(), 1);
    assert_int_equal(dp.lengths[0], 64);
}

void test_bad_options(void **) {
    const SliceCostFn cost = [](int64_t l, int64_t) { return double(l); };
    SlicingOptions o;
    o.stages = 0;
    o.prompt_tokens = 16;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "stages", [&] { plan_token_slices(cost, o); });
    o.stages = 2;
    o.granularity = 3;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "multiple of the granularity 3",
                               [&] { plan_token_slices(cost, o); });
    o.granularity = 0;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "granularity", [&] { plan_token_slices(cost, o); });
    o.granularity = 4;
    o.epsilon_seconds = -1;
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "epsilon", [&] { plan_token_slices(cost, o); });
    o.epsilon_seconds = 0;
    const SliceCostFn broken = [](int64_t, int64_t c) { return c > 4 ? std::nan("") : 1.0; };
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "after 8 is nan",
                               [&] { plan_token_slices(broken, o); });
    pagoda::test::expect_error(PAGODA_ERR_INVALID_ARGUMENT, "slice of 0",
                               [&] { evaluate_slicing(cost, 2, {4, 0}); });
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_brute_force),
        cmocka_unit_test(test_epsilon_bound),
        cmocka_unit_test(test_longer_slices_first),
        cmocka_unit_test(test_single_stage_one_slice),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
