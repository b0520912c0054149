#include "plan/context_fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

ContextFit fit_context_term(const std::vector<ContextSample> &samples) {
    std::set<int64_t> ls;
    for (const ContextSample &s : samples) {
        if (s.context <= 0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "context fit: a sample has context " + std::to_string(s.context) +
                            "; the overhead of no context is 0 by definition, fit only c > 0");
        ls.insert(s.tokens);
    }
    if (ls.size() < 2)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "context fit: the samples have " + std::to_string(ls.size()) +
                        " token count(s); need at least 2 to separate a2·c from a3·l·c");

    // overhead = c · (a2 + a3·l): least squares on the regressors c and l·c, scaled to about 1
    // so the 2 × 2 normal equations stay well conditioned.
    const double l_scale = std::max(1.0, double(*ls.rbegin()));
    double c_scale = 1.0;
    for (const ContextSample &s : samples) c_scale = std::max(c_scale, double(s.context));
    double xx = 0, xz = 0, zz = 0, xy = 0, zy = 0;  // x = c, z = l·c
    for (const ContextSample &s : samples) {
        const double x = double(s.context) / c_scale, z = x * double(s.tokens) / l_scale;
        xx += x * x;
        xz += x * z;
        zz += z * z;
        xy += x * s.overhead_seconds;
        zy += z * s.overhead_seconds;
    }
    const double det = xx * zz - xz * xz;
    if (!(std::fabs(det) > 1e-12 * xx * zz))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "context fit: the samples do not determine the coefficients (singular system)");
    double x = (zz * xy - xz * zy) / det, z = (xx * zy - xz * xy) / det;
    // Both terms are work (reading the cached K/V, queries meeting keys), never a saving. A
    // negative one is noise fitted, and it bends the overhead negative for slices shorter than
    // the grid's: on a loaded 2-core machine a2 came out −1.0e-5 s, so a 32-token slice after
    // 2000 cached tokens was predicted 13 ms faster than with none, and the DP cut the prompt
    // into 32-token slices that ran 24 % slower than not slicing. Least squares under a2, a3 ≥ 0:
    // when the free optimum leaves the quadrant, the best fit lies on an edge (one term alone).
    if (x < 0 || z < 0) {
        const double x_only = std::max(0.0, xy / xx), z_only = std::max(0.0, zy / zz);
        // Residual sums of squares, up to the same constant, of the two one-term fits.
        const double x_rss = -2 * x_only * xy + x_only * x_only * xx;
        const double z_rss = -2 * z_only * zy + z_only * z_only * zz;
        x = x_rss <= z_rss ? x_only : 0.0;
        z = x_rss <= z_rss ? 0.0 : z_only;
    }
    ContextFit fit;
    fit.a2 = x / c_scale;
    fit.a3 = z / (c_scale * l_scale);
    return fit;
}

double context_fit_error(const ContextFit &fit, const std::vector<ContextSample> &samples) {
    double diff = 0, total = 0;
    for (const ContextSample &s : samples) {
        diff += std::fabs(fit(s.tokens, s.context) - s.overhead_seconds);
        total += std::fabs(s.overhead_seconds);
    }
    if (total == 0) return diff == 0 ? 0.0 : INFINITY;
    return diff / total;
}

}  // namespace pagoda::plan
