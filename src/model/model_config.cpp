#include "model/model_config.hpp"

#include <limits>

#include "common/error.hpp"

namespace pagoda::model {

namespace {

// Bounds that keep every product the loaders form (vocab·hidden, heads·head_dim, ...) inside
// int64 and the per-layer tensor list a reasonable size, whatever a hostile file claims.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxLayers = 4096;

[[noreturn]] void fail(const std::string &source, const std::string &what) {
    throw Error(PAGODA_ERR_FORMAT, source + ": " + what);
}

void check_size(const std::string &source, const char *field, int64_t value, int64_t max) {
    if (value <= 0 || value > max)
        fail(source, std::string(field) + " is " + std::to_string(value) + ", expected 1.." +
                         std::to_string(max));
}

void check_token(const std::string &source, const char *field, int64_t id, int64_t vocab) {
    if (id < 0 || id >= vocab)
        fail(source, std::string(field) + " " + std::to_string(id) +
                         " is not a token of the vocabulary of " + std::to_string(vocab));
}

}  // namespace

void validate(const ModelConfig &c, const std::string &source) {
    check_size(source, "vocab_size", c.vocab_size, kMaxDimension);
    check_size(source, "hidden_size", c.hidden_size, kMaxDimension);
    check_size(source, "intermediate_size", c.intermediate_size, kMaxDimension);
    check_size(source, "n_layers", c.n_layers, kMaxLayers);
    check_size(source, "n_heads", c.n_heads, kMaxDimension);
    check_size(source, "n_kv_heads", c.n_kv_heads, kMaxDimension);
    check_size(source, "head_dim", c.head_dim, kMaxDimension);
    check_size(source, "max_position", c.max_position, kMaxDimension);
    if (c.n_heads % c.n_kv_heads != 0)
        fail(source, "n_heads " + std::to_string(c.n_heads) + " is not a multiple of n_kv_heads " +
                         std::to_string(c.n_kv_heads));
    if (c.head_dim % 2 != 0)
        fail(source, "head_dim " + std::to_string(c.head_dim) + " is odd; RoPE rotates pairs");
    // hidden_size == n_heads·head_dim is not required here: some models set head_dim explicitly
    // to something else. Loaders that derive head_dim check that hidden_size divides instead.
    if (!(c.rms_norm_eps > 0.0) || !(c.rms_norm_eps < 1.0))
        fail(source, "rms_norm_eps " + std::to_string(c.rms_norm_eps) + " is not in (0, 1)");
    if (!(c.rope.theta > 0.0) || c.rope.theta == std::numeric_limits<double>::infinity())
        fail(source, "rope theta " + std::to_string(c.rope.theta) + " is not positive and finite");
    if (c.rope.scaling != PAGODA_ROPE_SCALING_NONE) {
        if (!(c.rope.factor > 0.0) || c.rope.factor == std::numeric_limits<double>::infinity())
            fail(source, "rope scaling factor " + std::to_string(c.rope.factor) +
                             " is not positive and finite");
    }
    if (c.rope.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        if (!(c.rope.low_freq_factor > 0.0) ||
            !(c.rope.high_freq_factor > c.rope.low_freq_factor) ||
            c.rope.high_freq_factor == std::numeric_limits<double>::infinity())
            fail(source, "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, got " +
                             std::to_string(c.rope.low_freq_factor) + " and " +
                             std::to_string(c.rope.high_freq_factor));
        check_size(source, "rope original_max_position", c.rope.original_max_position,
                   kMaxDimension);
    }
    if (c.sliding_window < 0)
        fail(source, "sliding_window " + std::to_string(c.sliding_window) + " is negative");
    if (!c.sliding_layers.empty() && int64_t(c.sliding_layers.size()) != c.n_layers)
        fail(source, "the sliding-window pattern names " + std::to_string(c.sliding_layers.size()) +
                         " layers, the model has " + std::to_string(c.n_layers));
    if (c.bos_token_id != -1) check_token(source, "bos_token_id", c.bos_token_id, c.vocab_size);
    for (int32_t id : c.eos_token_ids) check_token(source, "eos_token_id", id, c.vocab_size);
}

const char *architecture_name(Architecture a) {
    switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Mistral: return "mistral";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    }
    return "unknown";
}

}  // namespace pagoda::model
