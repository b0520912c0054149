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
    // A mixture of experts (0 experts: dense). `sparse_layers` of the layers hold a router and
    // the experts instead of the dense MLP; layer costs are their average over the layers, which
    // is exact for models whose every layer is sparse (Mixtral, Qwen3-MoE as released).
    int64_t experts = 0;
    int64_t experts_per_token = 0;
    int64_t expert_intermediate = 0;
    int64_t sparse_layers = 0;

    bool operator==(const ModelShape &) const = default;

    // Parameters one decoder layer holds, on average: Q, K, V, O, two norms and the MLP (gate,
    // up, down; or the router and every expert's).
    double layer_parameters() const;
    // Of those, the ones a step of `tokens` tokens reads: every attention weight and, of the
    // experts, those picked, E·(1 − (1 − k/E)^tokens) distinct ones expected under even routing.
    double layer_parameters_read(int64_t tokens) const;
    // The ones each token multiplies by (its k experts': a MoE's active parameters).
    double layer_parameters_active() const;
    // "h4096-i14336-l32-q32-kv8-d128-v128256" (and "-e8k2x14336s32" with experts): the key a
    // cost file stores measurements under.
    std::string key() const;
};

ModelShape model_shape(const model::ModelConfig &config);

// Throws Error(INVALID_ARGUMENT) naming the first field that is not positive, or an expert field
// that disagrees with the others.
void validate(const ModelShape &shape);

}  // namespace pagoda::plan
