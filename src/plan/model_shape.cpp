#include "plan/model_shape.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

// One layer's parameters with `experts_held` experts' MLPs in its sparse form.
double parameters(const ModelShape &s, double experts_held) {
    const double h = double(s.hidden), q = double(s.heads * s.head_dim), kv = double(s.kv_heads * s.head_dim);
    const double attention = h * (q + 2 * kv) + q * h + 2 * h;
    const double dense = 3 * h * double(s.intermediate);
    if (s.experts == 0 || s.layers == 0) return attention + dense;
    const double sparse = h * double(s.experts) + experts_held * 3 * h * double(s.expert_intermediate);
    const double share = double(s.sparse_layers) / double(s.layers);
    return attention + share * sparse + (1 - share) * dense;
}

}  // namespace

double ModelShape::layer_parameters() const { return parameters(*this, double(experts)); }

double ModelShape::layer_parameters_active() const { return parameters(*this, double(experts_per_token)); }

double ModelShape::layer_parameters_read(int64_t tokens) const {
    if (experts == 0) return layer_parameters();
    const double e = double(experts), unpicked = 1.0 - double(experts_per_token) / e;
    return parameters(*this, e * (1.0 - std::pow(unpicked, double(std::max<int64_t>(tokens, 1)))));
}

std::string ModelShape::key() const {
    return "h" + std::to_string(hidden) + "-i" + std::to_string(intermediate) + "-l" + std::to_string(layers) +
           "-q" + std::to_string(heads) + "-kv" + std::to_string(kv_heads) + "-d" + std::to_string(head_dim) +
           "-v" + std::to_string(vocab) +
           (experts == 0 ? "" : "-e" + std::to_string(experts) + "k" + std::to_string(experts_per_token) + "x" +
                                    std::to_string(expert_intermediate) + "s" + std::to_string(sparse_layers));
}

ModelShape model_shape(const model::ModelConfig &c) {
    ModelShape s;
    s.hidden = c.hidden_size;
    s.intermediate = c.intermediate_size;
    s.layers = c.n_layers;
    s.heads = c.n_heads;
    s.kv_heads = c.n_kv_heads;
    s.head_dim = c.head_dim;
    s.vocab = c.vocab_size;
    s.tied_embeddings = c.tie_word_embeddings;
    if (c.n_experts > 0) {
        s.experts = c.n_experts;
        s.experts_per_token = c.experts_per_token;
        s.expert_intermediate = c.expert_intermediate_size;
        for (int64_t l = 0; l < c.n_layers; ++l) s.sparse_layers += c.is_sparse(l) ? 1 : 0;
    }
    return s;
}

void validate(const ModelShape &s) {
    const std::pair<const char *, int64_t> fields[] = {
        {"hidden", s.hidden},   {"intermediate", s.intermediate}, {"layers", s.layers},
        {"heads", s.heads},     {"kv_heads", s.kv_heads},         {"head_dim", s.head_dim},
        {"vocab", s.vocab},
    };
    for (const auto &[name, value] : fields)
        if (value <= 0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string("model shape: ") + name + " is " + std::to_string(value) + ", want > 0");
    if (s.experts == 0) {
        if (s.experts_per_token != 0 || s.expert_intermediate != 0 || s.sparse_layers != 0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "model shape: expert fields without experts");
        return;
    }
    if (s.experts < 0 || s.experts_per_token < 1 || s.experts_per_token > s.experts || s.expert_intermediate < 1 ||
        s.sparse_layers < 1 || s.sparse_layers > s.layers)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "model shape: " + std::to_string(s.experts) + " experts, " + std::to_string(s.experts_per_token) +
                        " per token, " + std::to_string(s.expert_intermediate) + " columns each, " +
                        std::to_string(s.sparse_layers) + " sparse layers of " + std::to_string(s.layers) +
                        " (want 1 <= per token <= experts, columns >= 1, 1 <= sparse layers <= layers)");
}

}  // namespace pagoda::plan
