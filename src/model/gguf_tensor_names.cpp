#include "model/gguf_tensor_names.hpp"

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
};
constexpr NamePair kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

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

std::string canonical_tensor_name(std::string_view gguf) {
    for (const auto &n : kModelNames)
        if (gguf == n.gguf) return n.canonical;
    int64_t layer = 0;
    std::string_view rest;
    if (!split_layer(gguf, "blk.", &layer, &rest)) return "";
    for (const auto &n : kLayerNames)
        if (rest == n.gguf) return "model.layers." + std::to_string(layer) + "." + n.canonical;
    return "";
}

std::string gguf_tensor_name(std::string_view canonical) {
    for (const auto &n : kModelNames)
        if (canonical == n.canonical) return n.gguf;
    int64_t layer = 0;
    std::string_view rest;
    if (split_layer(canonical, "model.layers.", &layer, &rest))
        for (const auto &n : kLayerNames)
            if (rest == n.canonical) return "blk." + std::to_string(layer) + "." + n.gguf;
    return "";
}

}  // namespace pagoda::model
