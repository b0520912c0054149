#include "model/gguf_tensor_names.hpp"

#include <iterator>
#include <vector>

#include "model/llama_tensors.hpp"

namespace pagoda::model {

namespace {

// The whole-model tensors, then the per-layer suffixes ("blk.N." and "model.layers.N." prefixes).
struct NamePair {
    const char *gguf;
    const char *canonical;
};
constexpr NamePair kModelNames[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
    // Llama 3.1+ RoPE scaling as per-frequency divisors. Hugging Face has no such tensor (its
    // config.json states the scaling), so the canonical name is Pagoda's own.
    {"rope_freqs.weight", kRopeFreqsTensor},
    {"rope_factors_long.weight", kRopeFactorsLongTensor},
    {"rope_factors_short.weight", kRopeFactorsShortTensor},
};
constexpr NamePair kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_qkv.weight", "self_attn.qkv_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    // Mixture of experts: the router, and each projection's experts stacked in one tensor.
    {"ffn_gate_inp.weight", "mlp.gate.weight"},
    {"ffn_gate_exps.weight", "mlp.experts.gate_proj.weight"},
    {"ffn_up_exps.weight", "mlp.experts.up_proj.weight"},
    {"ffn_down_exps.weight", "mlp.experts.down_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

// The names that differ between namings (TensorNaming).
constexpr NamePair kLlamaNames[] = {
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
};
constexpr NamePair kGemmaNames[] = {
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
};
constexpr NamePair kPhi3Names[] = {
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_up.weight", "mlp.gate_up_proj.weight"},
};

// The layer names that apply under `naming`, shared ones first.
std::vector<NamePair> layer_names(TensorNaming naming) {
    std::vector<NamePair> names(std::begin(kLayerNames), std::end(kLayerNames));
    switch (naming) {
    case TensorNaming::Llama: names.insert(names.end(), std::begin(kLlamaNames), std::end(kLlamaNames)); break;
    case TensorNaming::Gemma: names.insert(names.end(), std::begin(kGemmaNames), std::end(kGemmaNames)); break;
    case TensorNaming::Phi3: names.insert(names.end(), std::begin(kPhi3Names), std::end(kPhi3Names)); break;
    }
    return names;
}

// Splits "<prefix>N.<rest>" into N and rest; false unless N is a plain decimal (no sign, no
// leading zero) small enough for an int32.
bool split_layer(std::string_view name, std::string_view prefix, int64_t *layer, std::string_view *rest) {
    if (name.substr(0, prefix.size()) != prefix) return false;
    name.remove_prefix(prefix.size());
    size_t digits = 0;
    while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9 || (digits > 1 && name[0] == '0')) return false;
    if (digits >= name.size() || name[digits] != '.') return false;
    *layer = std::stoll(std::string(name.substr(0, digits)));
    *rest = name.substr(digits + 1);
    return true;
}

}  // namespace

TensorNaming tensor_naming(const ModelConfig &config) {
    if (config.sandwich_norms) return TensorNaming::Gemma;
    if (config.fused_projections) return TensorNaming::Phi3;
    return TensorNaming::Llama;
}

std::string canonical_tensor_name(std::string_view gguf, TensorNaming naming) {
    for (const auto &n : kModelNames)
        if (gguf == n.gguf) return n.canonical;
    int64_t layer = 0;
    std::string_view rest;
    if (!split_layer(gguf, "blk.", &layer, &rest)) return "";
    for (const auto &n : layer_names(naming))
        if (rest == n.gguf) return "model.layers." + std::to_string(layer) + "." + n.canonical;
    return "";
}

std::string gguf_tensor_name(std::string_view canonical, TensorNaming naming) {
    for (const auto &n : kModelNames)
        if (canonical == n.canonical) return n.gguf;
    int64_t layer = 0;
    std::string_view rest;
    if (split_layer(canonical, "model.layers.", &layer, &rest))
        for (const auto &n : layer_names(naming))
            if (rest == n.canonical) return "blk." + std::to_string(layer) + "." + n.gguf;
    return "";
}

}  // namespace pagoda::model
