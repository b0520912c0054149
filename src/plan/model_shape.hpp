// The few numbers of a model that its costs depend on: a decoder layer's matrix sizes, the
// attention heads and the vocabulary. Weights' values do not matter, so a random-weight model of
// a shape costs what a trained one does.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.hpp"

namespace pagoda::plan {

struct ModelShape {
    int64_t hidden = 0;
    int64_t intermediate = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t vocab = 0;
    bool tied_embeddings = false;

    bool operator==(const ModelShape &) const = default;

    // Parameters of one decoder layer: Q, K, V, O, gate, up, down and two norms.
    double layer_parameters() const;
    // "h4096-i14336-l32-q32-kv8-d128-v128256": the key a cost file stores measurements under.
    std::string key() const;
};

ModelShape model_shape(const model::ModelConfig &config);

// Throws Error(INVALID_ARGUMENT) naming the first field that is not positive.
void validate(const ModelShape &shape);

}  // namespace pagoda::plan
