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
    ContextFit fit;
    fit.a2 = (zz * xy - xz * zy) / det / c_scale;
    fit.a3 = (xx * zy - xz * xy) / det / (c_scale * l_scale);
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
