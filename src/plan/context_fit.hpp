// TeraPipe Eq. 9: a layer's time for l new tokens after c cached ones is t(l, 0), measured for
// every l, plus a context term a0 + a1·l + a2·c + a3·l·c fitted by least squares on a grid of
// (l, c) points. Our term is the overhead over t(l, 0), so it vanishes at c = 0: a0 = a1 = 0 and
// only a2 (reading c cached tokens) and a3 (l queries meeting c keys) are fitted. Two free
// coefficients instead of four halve what noise in the measured differences can bend; with all
// four, a quiet run still fitted a negative a0 and mispredicted short contexts.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::plan {

struct ContextFit {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    double operator()(int64_t tokens, int64_t context) const {
        const double l = double(tokens), c = double(context);
        return a0 + a1 * l + a2 * c + a3 * l * c;
    }
};

// One measured point: the extra seconds that `context` cached tokens add to `tokens` new ones,
// t(l, c) − t(l, 0).
struct ContextSample {
    int64_t tokens = 0;
    int64_t context = 0;
    double overhead_seconds = 0;
};

// Least squares for a2 ≥ 0 and a3 ≥ 0 over `samples` (a0 = a1 = 0). Throws Error(INVALID_ARGUMENT) when
// the samples cannot determine them: a sample with c ≤ 0 (its overhead is 0 by definition), or
// fewer than 2 distinct token counts.
ContextFit fit_context_term(const std::vector<ContextSample> &samples);

// Σ|predicted − measured| / Σ|measured| over `samples`: the relative error of the fitted
// overhead, weighted so that tiny overheads do not dominate. 0 when every overhead is 0 and
// predicted so.
double context_fit_error(const ContextFit &fit, const std::vector<ContextSample> &samples);

}  // namespace pagoda::plan
