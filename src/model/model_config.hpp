// What a model is, whatever file it came from: the hyper-parameters a forward pass needs. Both
// loaders (GGUF metadata, Hugging Face config.json) fill one of these; validate() checks it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/pooling_config.hpp"
#include "pagoda/ops.h"

namespace pagoda::model {

// The architectures the step program knows. They differ only in the flags and numbers below.
enum class Architecture { Llama, Mistral, Qwen2, Qwen3, Gemma2, Gemma3, Phi3, Mixtral, Qwen3Moe };

struct RopeConfig {
    double theta = 10000.0;
    // GGUF's llama tensors have Q and K rows permuted for pairs (2i, 2i+1) (llama.cpp's converter
    // does it), so GGUF models rotate INTERLEAVED; Hugging Face checkpoints rotate HALF_SPLIT.
    pagoda_rope_layout_t layout = PAGODA_ROPE_HALF_SPLIT;
    pagoda_rope_scaling_t scaling = PAGODA_ROPE_SCALING_NONE;
    double factor = 1.0;
    double low_freq_factor = 1.0;   // LLAMA3
    double high_freq_factor = 4.0;  // LLAMA3
    int64_t original_max_position = 0;
    // LongRoPE (Phi-3's "longrope", formerly "su"): each inv_freq[i] divided by a factor
    // (ModelConfig::longrope_divisors picks the list), and cos/sin multiplied by
    // attention_factor, which scales every q·k by its square. Empty lists: none.
    std::vector<float> long_factors, short_factors;
    double attention_factor = 1.0;
};

// Bounds every loader holds a config to (validate() names a count past it).
inline constexpr int64_t kMaxLayers = 4096;

struct ModelConfig {
    Architecture architecture = Architecture::Llama;
    std::string architecture_name;  // as the file names it: "LlamaForCausalLM", "llama", ...
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;            // hidden_size / n_heads unless the file says otherwise
    int64_t max_position = 0;        // the trained context length
    double rms_norm_eps = 1e-5;
    RopeConfig rope;
    bool tie_word_embeddings = false;  // lm_head shares the embedding matrix
    bool attention_bias = false;       // Q, K, V projections have biases (Qwen2)
    bool qk_norm = false;              // each head of Q and K is RMS-normalised before RoPE (Qwen3)
    // Phi-3: one qkv_proj of [Q; K; V] rows and one gate_up_proj of [gate; up] rows per layer.
    bool fused_projections = false;

    // Mixture of experts (Mixtral, Qwen3-MoE): a router (mlp.gate) picks experts_per_token of
    // n_experts SiLU-gated MLPs of expert_intermediate_size (mlp.experts.J.*) per token, weighted
    // as moe_routing says; 0 experts = a dense model. Per layer, 1 = sparse; empty = every layer.
    int64_t n_experts = 0;
    int64_t experts_per_token = 0;
    int64_t expert_intermediate_size = 0;
    pagoda_moe_routing_t moe_routing = PAGODA_MOE_SOFTMAX_TOPK_NORM;
    std::vector<uint8_t> sparse_layers;

    // Gemma: the attention's and the MLP's outputs are RMS-normalised before the residual add
    // (post_attention_layernorm, post_feedforward_layernorm), and the MLP's input has a norm of
    // its own (pre_feedforward_layernorm) where Llama's is post_attention_layernorm.
    bool sandwich_norms = false;
    // Added to every RMSNorm weight as it is applied: Gemma's checkpoints store w for a scale of
    // 1 + w (llama.cpp's converter adds the 1 into its GGUF files, which then say 0).
    double norm_weight_offset = 0.0;
    pagoda_glu_activation_t mlp_activation = PAGODA_GLU_SILU;
    double embedding_scale = 0.0;       // embeddings multiplied by it; 0 = 1 (Gemma: √hidden)
    double query_pre_attn_scalar = 0.0;  // scores scaled by its −½ power; 0 = head_dim's
    double attn_logit_softcap = 0.0;     // 0 = none (Gemma 2: 50)
    double final_logit_softcap = 0.0;    // 0 = none (Gemma 2: 30)
    // The rotation of the sliding-window layers where it differs from `rope` (Gemma 3: base
    // 10000 and no scaling, its global layers 1e6 and linear scaling).
    bool has_sliding_rope = false;
    RopeConfig sliding_rope;
    int64_t sliding_window = 0;        // 0 = none (Mistral may set one)
    // Per layer: 1 = attends within sliding_window, 0 = sees every earlier token. Empty: every
    // layer slides. (Qwen's use_sliding_window spares the first max_window_layers layers.)
    std::vector<uint8_t> sliding_layers;
    int32_t bos_token_id = -1;         // -1 = none
    std::vector<int32_t> eos_token_ids;
    // How its embeddings are pooled and normalized, where its files say (embedding requests).
    PoolingConfig pooling;

    // The window layer `layer` attends within; 0 = unbounded.
    int64_t window_of(int64_t layer) const {
        if (sliding_layers.empty()) return sliding_window;
        return sliding_layers.at(size_t(layer)) ? sliding_window : 0;
    }
    const RopeConfig &rope_of(int64_t layer) const {
        return has_sliding_rope && window_of(layer) > 0 ? sliding_rope : rope;
    }
    // The factor of q·k before the softmax.
    double attention_scale() const;
    // LongRoPE's divisors of the main rotation: the long factors when the model's context passes
    // the original one (as transformers picks them for a sequence that long, and llama.cpp for
    // a context that long), else the short ones; empty without LongRoPE.
    const std::vector<float> &longrope_divisors() const {
        return max_position > rope.original_max_position ? rope.long_factors : rope.short_factors;
    }
    // Whether layer `layer`'s MLP is a mixture of experts.
    bool is_sparse(int64_t layer) const {
        return n_experts > 0 && (sparse_layers.empty() || sparse_layers.at(size_t(layer)) != 0);
    }
};

// Throws Error(PAGODA_ERR_FORMAT) naming `source` and the field when the numbers cannot describe
// a model (non-positive sizes, heads that do not divide, a head_dim that is odd for RoPE, ...).
void validate(const ModelConfig &config, const std::string &source);

// "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "mixtral", "qwen3moe".
const char *architecture_name(Architecture a);

}  // namespace pagoda::model
