// Picking the n best-scored tokens out of a vocabulary-sized row without sorting the whole row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::sample {

struct ScoredToken {
    float score;
    int32_t token;
};

// The one order every ranking in the sampler uses: higher score first, ties to the lower id, so
// results never depend on how a standard library's sort or selection breaks ties.
inline bool ranks_before(const ScoredToken &a, const ScoredToken &b) {
    return a.score > b.score || (a.score == b.score && a.token < b.token);
}

// Writes the min(n, scores.size()) best entries of `scores` (which must hold no NaN) into `out`,
// best first. `out` is reused storage; its old contents are dropped.
void select_best(std::span<const float> scores, size_t n, std::vector<ScoredToken> &out);

}  // namespace pagoda::sample
