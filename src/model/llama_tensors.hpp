// The weights a Llama-family config implies: every tensor's canonical (Hugging Face) name and the
// shape it must have. Both loaders check their tensor tables against this one list, so a GGUF and
// a safetensors checkpoint of the same model are held to the same contract.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace pagoda::model {

struct ExpectedTensor {
    std::string name;            // canonical: "model.layers.3.self_attn.q_proj.weight"
    std::vector<int64_t> shape;  // outermost first, as TensorRef::shape
};

// In a stable order: embeddings, then each layer's tensors, then the final norm and lm_head.
// lm_head is absent when config.tie_word_embeddings; Q/K/V biases present when
// config.attention_bias; per-head Q/K norm weights when config.qk_norm; Gemma's two extra norms
// when config.sandwich_norms (post_attention_layernorm is then the attention output's); Phi-3's
// qkv_proj and gate_up_proj in place of the separate ones when config.fused_projections.
// Assumes `config` passed validate().
// A mixture-of-experts layer's experts: one tensor per expert and projection, as Hugging Face
// stores them ("mlp.experts.3.gate_proj.weight"), or each projection's experts stacked in one
// [n_experts, rows, cols] tensor, as GGUF does ("mlp.experts.gate_proj.weight", a name of ours).
// Either way the router is "mlp.gate.weight" [n_experts, hidden] (Mixtral's block_sparse_moe
// names are read as these).
enum class ExpertLayout { PerExpert, Stacked };
std::vector<ExpectedTensor> llama_expected_tensors(const ModelConfig &config,
                                                   ExpertLayout experts = ExpertLayout::PerExpert);

// An optional tensor beyond that list: RoPE frequency divisors, F32 [head_dim / 2], as Llama 3.1+
// GGUF files carry them (rope_freqs.weight). Hugging Face has no such tensor, so the name is ours.
inline constexpr const char *kRopeFreqsTensor = "model.rope_freqs.weight";
// Phi-3's LongRoPE factors in GGUF (rope_factors_long.weight, rope_factors_short.weight; F32
// [head_dim / 2]); Hugging Face states them in config.json. The loader picks one into the
// config's RopeConfig::divisors.
inline constexpr const char *kRopeFactorsLongTensor = "model.rope_factors_long.weight";
inline constexpr const char *kRopeFactorsShortTensor = "model.rope_factors_short.weight";

// "[4096, 11008]", for messages.
std::string shape_string(const std::vector<int64_t> &shape);

}  // namespace pagoda::model
