#include "decode_weights.hpp"

#include <cmath>
#include <cstring>

namespace pagoda::bench {

double expected_distinct_experts(const pagoda_model_info_t &m, int batch) {
    if (m.n_experts <= 0) return 0.0;
    const double E = double(m.n_experts), k = double(m.experts_per_token);
    return E * (1.0 - std::pow(1.0 - k / E, double(batch)));
}

StepWeights weights_read_per_step(const pagoda_model_info_t &m, int batch) {
    const double h = double(m.hidden_size), f = double(m.intermediate_size);
    const double q = double(m.n_heads * m.head_dim), kv = double(m.n_kv_heads * m.head_dim);
    double attention = h * q + 2 * h * kv + q * h + 2 * h;  // and the two RMSNorms
    if (std::strcmp(m.architecture, "qwen2") == 0) attention += q + 2 * kv;  // Q/K/V biases
    const double dense_mlp = 3 * h * f;
    const double expert = 3 * h * double(m.expert_intermediate_size);  // gate, up and down
    const double sparse = double(m.n_sparse_layers), dense = double(m.n_layers) - sparse;
    const double router = double(m.n_experts) * h;
    const double head = h + double(m.vocab_size) * h;  // the final norm and the LM head

    StepWeights w;
    w.distinct_experts = expected_distinct_experts(m, batch);
    const double shared = double(m.n_layers) * attention + dense * dense_mlp + sparse * router + head;
    w.active = shared + sparse * w.distinct_experts * expert;
    w.total = shared + sparse * double(m.n_experts) * expert;
    return w;
}

}  // namespace pagoda::bench
