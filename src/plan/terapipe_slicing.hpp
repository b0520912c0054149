// TeraPipe's token slicing (Li et al., ICML'21, §3.3) for the pipelined prefill of one long
// prompt over K identical stages: cut the L prompt tokens into slices l_1..l_M so that
//   T = Σ t_i + (K−1)·max t_i,  t_i = t(l_i, Σ_{j<i} l_j)          (Eq. 5)
// is least, where t(l, c) is one stage's time for l new tokens after c cached ones.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace pagoda::plan {

// Seconds one stage takes for `tokens` new tokens after `context` cached ones.
using SliceCostFn = std::function<double(int64_t tokens, int64_t context)>;

struct SlicingOptions {
    int32_t stages = 1;          // K
    int64_t prompt_tokens = 0;   // L; a multiple of granularity
    int64_t granularity = 1;     // every slice is a multiple of this many tokens (e.g. 8, a KV block)
    // t_max candidates less than epsilon above the last one evaluated are skipped (TeraPipe
    // §3.3 "Optimization"); the result is then within K·epsilon of the optimum. 0 = exact.
    double epsilon_seconds = 0.0;
};

struct Slicing {
    std::vector<int64_t> lengths;     // slice lengths in tokens, in prompt order
    double latency_seconds = 0;       // Eq. 5 for these slices
    double total_slice_seconds = 0;   // Σ t_i
    double max_slice_seconds = 0;     // max t_i
    int64_t candidates_evaluated = 0; // t_max values the DP ran for (for benchmarks)
};

// Eq. 5 for the given slices. Throws Error(INVALID_ARGUMENT) for K < 1 or a slice ≤ 0.
Slicing evaluate_slicing(const SliceCostFn &cost, int32_t stages, const std::vector<int64_t> &lengths);

// The optimal slicing by the DP with t_max enumeration (Eq. 6–8): candidates ascending from the
// least feasible bottleneck, stopping once no larger bottleneck can win, with the ε skip.
// Throws Error(INVALID_ARGUMENT) naming the option at fault (K < 1, L or g ≤ 0, L not a multiple
// of g, ε < 0), and for a cost function returning a negative or non-finite time.
Slicing plan_token_slices(const SliceCostFn &cost, const SlicingOptions &options);

// The best slicing into equal slices (M slices of L/M tokens, L/M a multiple of g), the baseline
// TeraPipe's Fig. 6 compares against. Throws as plan_token_slices.
Slicing best_uniform_slicing(const SliceCostFn &cost, const SlicingOptions &options);

}  // namespace pagoda::plan
