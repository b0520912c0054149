#include "plan/terapipe_slicing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_options(const SlicingOptions &o) {
    if (o.stages < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "slicing: stages is " + std::to_string(o.stages) + ", want >= 1");
    if (o.granularity <= 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "slicing: granularity is " + std::to_string(o.granularity) + ", want > 0");
    if (o.prompt_tokens <= 0 || o.prompt_tokens % o.granularity != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "slicing: prompt_tokens is " + std::to_string(o.prompt_tokens) +
                        ", want a positive multiple of the granularity " + std::to_string(o.granularity));
    if (!(o.epsilon_seconds >= 0) || std::isinf(o.epsilon_seconds))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "slicing: epsilon_seconds is " + std::to_string(o.epsilon_seconds) + ", want >= 0");
}

double checked_cost(const SliceCostFn &cost, int64_t tokens, int64_t context) {
    const double t = cost(tokens, context);
    if (!(t >= 0) || std::isinf(t))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "slicing: the cost of " + std::to_string(tokens) +
                                                     " tokens after " + std::to_string(context) +
                                                     " is " + std::to_string(t) + ", want finite and >= 0");
    return t;
}

// Every slice cost in units of the granularity: row `end` (1..n) lists t(end−start, start) for
// start = 0..end−1, so the DP's inner loop reads memory in order.
class SliceCostTable {
public:
    SliceCostTable(const SliceCostFn &cost, int64_t units, int64_t granularity) : n_(units) {
        costs_.resize(size_t(n_ * (n_ + 1) / 2));
        for (int64_t end = 1; end <= n_; ++end) {
            double *row = this->row(end);
            for (int64_t start = 0; start < end; ++start)
                row[start] = checked_cost(cost, (end - start) * granularity, start * granularity);
        }
    }
    int64_t units() const { return n_; }
    const double *row(int64_t end) const { return costs_.data() + size_t(end * (end - 1) / 2); }
    double *row(int64_t end) { return costs_.data() + size_t(end * (end - 1) / 2); }
    const std::vector<double> &all() const { return costs_; }

private:
    int64_t n_;
    std::vector<double> costs_;
};

// S*(i; t_max) of Eq. 7–8 for every prefix i, then the slices by backtracking. The inner loop
// keeps no argmin (it vectorises better); the backtrack finds the start that reproduces S*.
class SlicingDp {
public:
    explicit SlicingDp(const SliceCostTable &t) : t_(t), best_(size_t(t.units()) + 1) {}

    // Σ t_i of the best slicing with every t_i ≤ t_max, or +∞.
    double solve(double t_max) {
        best_[0] = 0.0;
        for (int64_t end = 1; end <= t_.units(); ++end) {
            const double *row = t_.row(end);
            double m = kInf;
            for (int64_t start = 0; start < end; ++start) {
                const double v = row[start] <= t_max ? best_[size_t(start)] + row[start] : kInf;
                m = v < m ? v : m;
            }
            best_[size_t(end)] = m;
        }
        return best_[size_t(t_.units())];
    }

    // The slices (in units) of the last solve(t_max); it must have been feasible.
    std::vector<int64_t> slices(double t_max) const {
        std::vector<int64_t> units;
        for (int64_t end = t_.units(); end > 0;) {
            const double *row = t_.row(end);
            int64_t start = 0;
            for (; start < end; ++start)
                if (row[start] <= t_max && best_[size_t(start)] + row[start] == best_[size_t(end)]) break;
            units.push_back(end - start);
            end = start;
        }
        std::reverse(units.begin(), units.end());
        return units;
    }

private:
    const SliceCostTable &t_;
    std::vector<double> best_;
};

std::vector<int64_t> to_tokens(std::vector<int64_t> units, int64_t granularity) {
    for (int64_t &u : units) u *= granularity;
    return units;
}

}  // namespace

Slicing evaluate_slicing(const SliceCostFn &cost, int32_t stages, const std::vector<int64_t> &lengths) {
    if (stages < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "slicing: stages is " + std::to_string(stages) + ", want >= 1");
    Slicing s;
    s.lengths = lengths;
    int64_t context = 0;
    for (int64_t l : lengths) {
        if (l <= 0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "slicing: a slice of " + std::to_string(l) + " tokens");
        const double t = checked_cost(cost, l, context);
        s.total_slice_seconds += t;
        s.max_slice_seconds = std::max(s.max_slice_seconds, t);
        context += l;
    }
    // TeraPipe Eq. 5: the work of one stage plus the fill and drain the slowest slice sets.
    s.latency_seconds = s.total_slice_seconds + double(stages - 1) * s.max_slice_seconds;
    return s;
}

Slicing plan_token_slices(const SliceCostFn &cost, const SlicingOptions &options) {
    check_options(options);
    const int64_t g = options.granularity;
    const SliceCostTable table(cost, options.prompt_tokens / g, g);
    SlicingDp dp(table);

    // Unbounded first: the least total work, a lower bound on Σ t_i for every t_max.
    const double least_sum = dp.solve(kInf);
    Slicing best = evaluate_slicing(cost, options.stages, to_tokens(dp.slices(kInf), g));
    best.candidates_evaluated = 1;

    std::vector<double> candidates = table.all();
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

    // Feasibility grows with t_max: binary-search the least feasible bottleneck.
    size_t lo = 0, hi = candidates.size() - 1;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        ++best.candidates_evaluated;
        if (dp.solve(candidates[mid]) < kInf) hi = mid;
        else lo = mid + 1;
    }

    const double k1 = double(options.stages - 1);
    int64_t evaluated = best.candidates_evaluated;
    // Eq. 6: a slicing whose bottleneck is t_max costs at least max(t_max, least Σ) + (K−1)·t_max,
    // so candidates past that bound cannot win (the paper's K·t_max early stop).
    size_t end = lo;
    while (end + 1 < candidates.size() &&
           std::max(candidates[end + 1], least_sum) + k1 * candidates[end + 1] < best.latency_seconds)
        ++end;

    // Evaluates S*(t_max) and keeps the slicing if it is the best so far.
    auto evaluate = [&](size_t i) {
        ++evaluated;
        const double sum = dp.solve(candidates[i]);
        if (sum < kInf && sum + k1 * candidates[i] < best.latency_seconds) {
            Slicing s = evaluate_slicing(cost, options.stages, to_tokens(dp.slices(candidates[i]), g));
            if (s.latency_seconds < best.latency_seconds) best = std::move(s);
        }
        return sum;
    };

    // Branch and bound over candidate ranges. S*(t) only falls as t grows, so for every t_max in
    // [c_a, c_b] the objective is at least S*(c_b) + (K−1)·c_a: a range whose bound cannot beat
    // the best is dropped whole, which skips most of the thousands of candidates an ascending
    // scan would run. A range narrower than ε is settled by its right end (the ε skip: off by at
    // most K·ε).
    struct Range {
        size_t first, last;
        double sum_at_last;
    };
    std::vector<Range> todo;
    if (end >= lo) todo.push_back({lo, end, evaluate(end)});
    while (!todo.empty()) {
        const Range r = todo.back();
        todo.pop_back();
        if (r.first >= r.last) continue;
        if (r.sum_at_last + k1 * candidates[r.first] >= best.latency_seconds) continue;
        if (candidates[r.last] - candidates[r.first] < options.epsilon_seconds) continue;
        const size_t mid = r.first + (r.last - r.first) / 2;
        const double sum_mid = evaluate(mid);
        // Upper half first on the stack's bottom: the lower half (cheaper bottlenecks) runs next.
        todo.push_back({mid + 1, r.last, r.sum_at_last});
        todo.push_back({r.first, mid, sum_mid});
    }
    best.candidates_evaluated = evaluated;
    return best;
}

Slicing best_uniform_slicing(const SliceCostFn &cost, const SlicingOptions &options) {
    check_options(options);
    const int64_t units = options.prompt_tokens / options.granularity;
    Slicing best;
    best.latency_seconds = kInf;
    for (int64_t m = 1; m <= units; ++m) {
        if (units % m != 0) continue;
        const std::vector<int64_t> lengths(size_t(m), options.prompt_tokens / m);
        Slicing s = evaluate_slicing(cost, options.stages, lengths);
        ++best.candidates_evaluated;
        if (s.latency_seconds < best.latency_seconds) {
            s.candidates_evaluated = best.candidates_evaluated;
            best = std::move(s);
        }
    }
    return best;
}

}  // namespace pagoda::plan
