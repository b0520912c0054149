// TeraPipe Eq. 9: a layer's time for l new tokens after c cached ones is t(l, 0), measured for
// every l, plus a context term fitted as a0 + a1·l + a2·c + a3·l·c by least squares on a grid
// of (l, c) points.
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

// Least squares over `samples`. Throws Error(INVALID_ARGUMENT) for fewer than 4 samples or a
// grid that cannot determine the four coefficients (one value of l or of c only).
ContextFit fit_context_term(const std::vector<ContextSample> &samples);

// Σ|predicted − measured| / Σ|measured| over `samples`: the relative error of the fitted
// overhead, weighted so that tiny overheads do not dominate. 0 when every overhead is 0 and
// predicted so.
double context_fit_error(const ContextFit &fit, const std::vector<ContextSample> &samples);

}  // namespace pagoda::plan
