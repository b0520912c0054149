#include "engine/pooling.hpp"

#include <cmath>

namespace pagoda::engine {

void add_rows(std::vector<double> &sum, const float *rows, size_t count, size_t dim) {
    if (sum.size() != dim) sum.assign(dim, 0.0);
    for (size_t r = 0; r < count; ++r) {
        const float *row = rows + r * dim;
        for (size_t i = 0; i < dim; ++i) sum[i] += double(row[i]);
    }
}

std::vector<float> pooled_vector(std::span<const double> sum, size_t rows, bool normalize) {
    const double n = rows > 0 ? double(rows) : 1.0;
    double squares = 0.0;
    for (double x : sum) squares += (x / n) * (x / n);
    // vLLM's F.normalize divides by max(norm, eps): a zero vector stays zero.
    const double norm = std::sqrt(squares);
    const double scale = normalize && norm > 1e-12 ? 1.0 / (n * norm) : 1.0 / n;
    std::vector<float> out(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) out[i] = float(sum[i] * scale);
    return out;
}

}  // namespace pagoda::engine
