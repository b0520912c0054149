// Embedding requests' pooling on the host: the final norm's hidden states of a request's prompt
// rows, which arrive chunk by chunk (chunked prefill), summed per request, then averaged (mean
// pooling; last-token pooling sums its one row) and scaled to unit length when asked.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace pagoda::engine {

// Adds `count` rows of `dim` floats into `sum`, which is sized (zeroed) on first use.
void add_rows(std::vector<double> &sum, const float *rows, size_t count, size_t dim);

// sum / rows, divided by its L2 norm when `normalize` (a zero vector stays zero), as f32.
std::vector<float> pooled_vector(std::span<const double> sum, size_t rows, bool normalize);

}  // namespace pagoda::engine
