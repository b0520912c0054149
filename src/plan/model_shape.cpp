#include "plan/model_shape.hpp"

#include <utility>

#include "common/error.hpp"

namespace pagoda::plan {

double ModelShape::layer_parameters() const {
    const double h = double(hidden), q = double(heads * head_dim), kv = double(kv_heads * head_dim);
    return h * (q + 2 * kv) + q * h + 3 * h * double(intermediate) + 2 * h;
}

std::string ModelShape::key() const {
    return "h" + std::to_string(hidden) + "-i" + std::to_string(intermediate) + "-l" + std::to_string(layers) +
           "-q" + std::to_string(heads) + "-kv" + std::to_string(kv_heads) + "-d" + std::to_string(head_dim) +
           "-v" + std::to_string(vocab);
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
}

}  // namespace pagoda::plan
