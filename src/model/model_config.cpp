#include "model/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.hpp"

namespace pagoda::model {

namespace {

// Bounds that keep every product the loaders form (vocab·hidden, heads·head_dim, ...) inside
// int64 and the per-layer tensor list a reasonable size, whatever a hostile file claims.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

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

// A number that is 0 (off) or positive and finite; or, `any_sign`, just finite.
void check_factor(const std::string &source, const char *field, double v, bool any_sign = false) {
    if (!std::isfinite(v) || (!any_sign && v < 0.0))
        fail(source, std::string(field) + " " + std::to_string(v) +
                         (any_sign ? " is not finite" : " is not 0 or positive and finite"));
}

void validate_rope(const RopeConfig &r, int64_t head_dim, const std::string &source, const std::string &what) {
    if (!(r.theta > 0.0) || r.theta == std::numeric_limits<double>::infinity())
        fail(source, what + " theta " + std::to_string(r.theta) + " is not positive and finite");
    if (r.scaling != PAGODA_ROPE_SCALING_NONE) {
        if (!(r.factor > 0.0) || r.factor == std::numeric_limits<double>::infinity())
            fail(source, what + " scaling factor " + std::to_string(r.factor) +
                             " is not positive and finite");
    }
    if (r.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        if (!(r.low_freq_factor > 0.0) || !(r.high_freq_factor > r.low_freq_factor) ||
            r.high_freq_factor == std::numeric_limits<double>::infinity())
            fail(source, "llama3 " + what + " scaling needs 0 < low_freq_factor < high_freq_factor, got " +
                             std::to_string(r.low_freq_factor) + " and " +
                             std::to_string(r.high_freq_factor));
        check_size(source, (what + " original_max_position").c_str(), r.original_max_position,
                   kMaxDimension);
    }
    if (r.long_factors.size() != r.short_factors.size())
        fail(source, what + " has " + std::to_string(r.long_factors.size()) + " long LongRoPE factors and " +
                         std::to_string(r.short_factors.size()) + " short ones");
    for (const std::vector<float> *factors : {&r.long_factors, &r.short_factors}) {
        if (factors->empty()) continue;
        if (int64_t(factors->size()) != head_dim / 2)
            fail(source, what + " has " + std::to_string(factors->size()) +
                             " LongRoPE factors, expected head_dim / 2 = " + std::to_string(head_dim / 2));
        for (float d : *factors)
            if (!(d > 0.0f) || !std::isfinite(d))
                fail(source, what + " LongRoPE factor " + std::to_string(d) + " is not positive and finite");
    }
    if (!(r.attention_factor > 0.0) || !std::isfinite(r.attention_factor))
        fail(source, what + " attention factor " + std::to_string(r.attention_factor) +
                         " is not positive and finite");
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
    validate_rope(c.rope, c.head_dim, source, "rope");
    if (c.has_sliding_rope) validate_rope(c.sliding_rope, c.head_dim, source, "sliding-window layers' rope");
    check_factor(source, "norm weight offset", c.norm_weight_offset, true);
    check_factor(source, "embedding scale", c.embedding_scale);
    check_factor(source, "query_pre_attn_scalar", c.query_pre_attn_scalar);
    check_factor(source, "attention logit soft-cap", c.attn_logit_softcap);
    check_factor(source, "final logit soft-cap", c.final_logit_softcap);
    if (c.sliding_window < 0)
        fail(source, "sliding_window " + std::to_string(c.sliding_window) + " is negative");
    if (c.n_experts != 0 || c.architecture == Architecture::Mixtral || c.architecture == Architecture::Qwen3Moe) {
        // Bounds of the MoE ops (ops.h): at most 1024 experts, 64 of them per token.
        check_size(source, "expert count", c.n_experts, 1024);
        check_size(source, "experts per token", c.experts_per_token, std::min<int64_t>(64, c.n_experts));
        check_size(source, "expert intermediate size", c.expert_intermediate_size, kMaxDimension);
        if (!c.sparse_layers.empty() && int64_t(c.sparse_layers.size()) != c.n_layers)
            fail(source, "the sparse-layer pattern names " + std::to_string(c.sparse_layers.size()) +
                             " layers, the model has " + std::to_string(c.n_layers));
    }
    if (!c.sliding_layers.empty() && int64_t(c.sliding_layers.size()) != c.n_layers)
        fail(source, "the sliding-window pattern names " + std::to_string(c.sliding_layers.size()) +
                         " layers, the model has " + std::to_string(c.n_layers));
    if (c.bos_token_id != -1) check_token(source, "bos_token_id", c.bos_token_id, c.vocab_size);
    for (int32_t id : c.eos_token_ids) check_token(source, "eos_token_id", id, c.vocab_size);
}

double ModelConfig::attention_scale() const {
    const double af = rope.attention_factor;  // LongRoPE scales q and k each by it
    return af * af / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : double(head_dim));
}

const char *architecture_name(Architecture a) {
    switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Mistral: return "mistral";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Gemma2: return "gemma2";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Phi3: return "phi3";
    case Architecture::Mixtral: return "mixtral";
    case Architecture::Qwen3Moe: return "qwen3moe";
    }
    return "unknown";
}

}  // namespace pagoda::model
