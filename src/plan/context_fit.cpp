#include "plan/context_fit.hpp"

#include <array>
#include <cmath>
#include <set>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

ContextFit fit_context_term(const std::vector<ContextSample> &samples) {
    if (samples.size() < 4)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "context fit: " + std::to_string(samples.size()) +
                                                     " samples, need at least 4");
    std::set<int64_t> ls, cs;
    for (const ContextSample &s : samples) {
        ls.insert(s.tokens);
        cs.insert(s.context);
    }
    if (ls.size() < 2 || cs.size() < 2)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "context fit: the samples have " + std::to_string(ls.size()) + " token count(s) and " +
                        std::to_string(cs.size()) + " context length(s); need at least 2 of each");

    // Regressors scaled to about 1 so the normal equations stay well conditioned.
    const double l_scale = double(*ls.rbegin()) > 0 ? double(*ls.rbegin()) : 1.0;
    const double c_scale = double(*cs.rbegin()) > 0 ? double(*cs.rbegin()) : 1.0;
    std::array<std::array<double, 5>, 4> m{};  // [A^T A | A^T y]
    for (const ContextSample &s : samples) {
        const double l = double(s.tokens) / l_scale, c = double(s.context) / c_scale;
        const std::array<double, 4> x = {1.0, l, c, l * c};
        for (size_t i = 0; i < 4; ++i) {
            for (size_t j = 0; j < 4; ++j) m[i][j] += x[i] * x[j];
            m[i][4] += x[i] * s.overhead_seconds;
        }
    }
    // Gaussian elimination with partial pivoting.
    for (size_t col = 0; col < 4; ++col) {
        size_t pivot = col;
        for (size_t r = col + 1; r < 4; ++r)
            if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
        if (std::fabs(m[pivot][col]) < 1e-12)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "context fit: the samples do not determine the coefficients (singular system)");
        std::swap(m[col], m[pivot]);
        for (size_t r = 0; r < 4; ++r) {
            if (r == col) continue;
            const double f = m[r][col] / m[col][col];
            for (size_t k = col; k < 5; ++k) m[r][k] -= f * m[col][k];
        }
    }
    ContextFit fit;
    fit.a0 = m[0][4] / m[0][0];
    fit.a1 = m[1][4] / m[1][1] / l_scale;
    fit.a2 = m[2][4] / m[2][2] / c_scale;
    fit.a3 = m[3][4] / m[3][3] / (l_scale * c_scale);
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
