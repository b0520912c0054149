// Shared by the sampler tests: seeded logits, plain double-precision references, and a check
// that a call throws pagoda::Error with the right status and a message naming the culprit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "sample/sampler.hpp"

namespace sample_test {

using pagoda::sample::Rng;
using pagoda::sample::uniform_unit;

// Logits uniform in [-scale, scale], from our own uniform so they are the same everywhere.
inline std::vector<float> random_logits(size_t vocab, float scale, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(vocab);
    for (float &x : v) x = float((2.0 * uniform_unit(rng) - 1.0) * scale);
    return v;
}

// softmax(z / temperature) in double, written the obvious way.
inline std::vector<double> ref_softmax(const std::vector<double> &z, double temperature = 1.0) {
    double max = -INFINITY;
    for (double x : z) max = std::max(max, x);
    std::vector<double> p(z.size());
    double sum = 0.0;
    for (size_t i = 0; i < z.size(); ++i) sum += p[i] = std::exp((z[i] - max) / temperature);
    for (double &x : p) x /= sum;
    return p;
}

inline std::vector<double> ref_log_softmax(const std::vector<float> &logits) {
    double max = -INFINITY;
    for (float x : logits) max = std::max(max, double(x));
    double sum = 0.0;
    for (float x : logits) sum += std::exp(double(x) - max);
    std::vector<double> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - max - std::log(sum);
    return out;
}

inline std::vector<double> to_double(const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
}

// Token ids from most to least likely, ties to the lower id.
template <class T>
std::vector<int32_t> ref_ranking(const std::vector<T> &values) {
    std::vector<int32_t> ids(values.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return values[size_t(a)] > values[size_t(b)]; });
    return ids;
}

// "" if `call` throws pagoda::Error with `status` and a message containing `needle`; otherwise
// what went wrong. (The verdict is a string so cmocka's longjmp never crosses a live try.)
template <class F>
std::string error_problem(F &&call, pagoda_status_t status, const std::string &needle) {
    try {
        call();
        return "no error thrown (wanted one mentioning \"" + needle + "\")";
    } catch (const pagoda::Error &e) {
        const std::string msg = e.what();
        if (e.status() != status)
            return "status " + std::to_string(int(e.status())) + " for \"" + msg + "\"";
        if (msg.find(needle) == std::string::npos)
            return "message \"" + msg + "\" lacks \"" + needle + "\"";
        return "";
    } catch (const std::exception &e) {
        return std::string("not a pagoda::Error: ") + e.what();
    }
}

}  // namespace sample_test

#define EXPECT_INVALID_ARGUMENT(statement, needle)                                         \
    do {                                                                                   \
        const std::string problem_ = sample_test::error_problem([&] { statement; },        \
                                                                PAGODA_ERR_INVALID_ARGUMENT, \
                                                                needle);                   \
        if (!problem_.empty()) fail_msg("%s: %s", #statement, problem_.c_str());           \
    } while (0)
