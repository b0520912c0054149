#include "plan/simulator_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pagoda::plan {

namespace {

constexpr int kMantissaBitsKept = 10;
constexpr int kShift = 52 - kMantissaBitsKept;
// Positive doubles order like their bit patterns, so a bin is a range of bit patterns.
const uint64_t kLowestKey = std::bit_cast<uint64_t>(1e-9) >> kShift;
const uint64_t kHighestKey = std::bit_cast<uint64_t>(1e9) >> kShift;

double bin_lower_edge(uint64_t bin) noexcept {
    return std::bit_cast<double>((bin + kLowestKey) << kShift);
}

}  // namespace

LatencyHistogram::LatencyHistogram() : bins_(kHighestKey - kLowestKey + 1, 0) {}

void LatencyHistogram::add(double seconds) noexcept {
    const uint64_t key = seconds > 0.0 ? std::bit_cast<uint64_t>(seconds) >> kShift : 0;
    const uint64_t bin = std::clamp(key, kLowestKey, kHighestKey) - kLowestKey;
    ++bins_[bin];
    if (count_ == 0 || seconds < min_) min_ = seconds;
    if (count_ == 0 || seconds > max_) max_ = seconds;
    ++count_;
    sum_ += seconds;
}

double LatencyHistogram::quantile(double q) const noexcept {
    if (count_ == 0) return 0.0;
    const uint64_t rank =
        std::clamp<uint64_t>(uint64_t(std::ceil(q * double(count_))), 1, count_);
    uint64_t seen = 0;
    for (uint64_t bin = 0; bin < bins_.size(); ++bin) {
        seen += bins_[bin];
        if (seen >= rank) {
            const double middle = 0.5 * (bin_lower_edge(bin) + bin_lower_edge(bin + 1));
            return std::clamp(middle, min_, max_);
        }
    }
    return max_;
}

}  // namespace pagoda::plan
