#include "sample/top_select.hpp"

#include <algorithm>

namespace pagoda::sample {

namespace {

// Below this ratio of n to the row size a bounded heap wins: almost every entry is rejected by
// one comparison with the heap's worst, and nothing row-sized is written.
constexpr size_t kHeapRowsPerKept = 16;

void select_with_heap(std::span<const float> scores, size_t n, std::vector<ScoredToken> &out) {
    // A max-heap under ranks_before keeps the worst of the kept entries at the front.
    for (size_t i = 0; i < n; ++i) out.push_back({scores[i], int32_t(i)});
    std::make_heap(out.begin(), out.end(), ranks_before);
    float worst = out.front().score;
    for (size_t i = n; i < scores.size(); ++i) {
        // Ids rise along the scan, so an equal score never displaces a kept (lower) id.
        if (!(scores[i] > worst)) continue;
        std::pop_heap(out.begin(), out.end(), ranks_before);
        out.back() = {scores[i], int32_t(i)};
        std::push_heap(out.begin(), out.end(), ranks_before);
        worst = out.front().score;
    }
    std::sort(out.begin(), out.end(), ranks_before);
}

void select_with_partition(std::span<const float> scores, size_t n,
                           std::vector<ScoredToken> &out) {
    for (size_t i = 0; i < scores.size(); ++i) out.push_back({scores[i], int32_t(i)});
    if (n < out.size()) {
        std::nth_element(out.begin(), out.begin() + ptrdiff_t(n), out.end(), ranks_before);
        out.resize(n);
    }
    std::sort(out.begin(), out.end(), ranks_before);
}

}  // namespace

void select_best(std::span<const float> scores, size_t n, std::vector<ScoredToken> &out) {
    out.clear();
    n = std::min(n, scores.size());
    if (n == 0) return;
    if (n * kHeapRowsPerKept <= scores.size())
        select_with_heap(scores, n, out);
    else
        select_with_partition(scores, n, out);
}

}  // namespace pagoda::sample
