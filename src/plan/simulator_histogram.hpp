// Latency quantiles of tens of millions of requests in constant memory: a log-scale histogram
// whose bins are the top 10 mantissa bits of the double (1 024 bins per power of two, as in
// HdrHistogram), so a quantile is off by at most half a bin, 2^-11 ≈ 0.05 % of its value, and
// counting a sample costs a shift. Quantiles are clamped to the smallest and largest sample seen,
// so a run where every request takes the same time reports that time exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::plan {

class LatencyHistogram {
public:
    // Samples below 1 ns land in the first bin, above 1e9 s in the last; both stay exact in
    // min(), max() and the mean.
    LatencyHistogram();

    void add(double seconds) noexcept;

    uint64_t count() const noexcept { return count_; }
    double mean() const noexcept { return count_ ? sum_ / double(count_) : 0.0; }
    double min() const noexcept { return count_ ? min_ : 0.0; }
    double max() const noexcept { return count_ ? max_ : 0.0; }
    // The nearest-rank q-quantile (0 < q ≤ 1): the smallest sample s with at least q·count samples
    // ≤ s, to within half a bin. 0 when empty.
    double quantile(double q) const noexcept;

private:
    std::vector<uint64_t> bins_;
    uint64_t count_ = 0;
    double sum_ = 0.0;
    double min_ = 0.0;
    double max_ = 0.0;
};

}  // namespace pagoda::plan
