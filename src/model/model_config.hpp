// What a model is, whatever file it came from: the hyper-parameters a forward pass needs. Both
// loaders (GGUF metadata, Hugging Face config.json) fill one of these; validate() checks it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pagoda/ops.h"

namespace pagoda::model {

// The architectures the step program knows. Llama-family models differ only in these flags.
enum class Architecture { Llama, Mistral, Qwen2, Qwen3 };

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
};

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
    int64_t sliding_window = 0;        // 0 = none (Mistral may set one)
    // Per layer: 1 = attends within sliding_window, 0 = sees every earlier token. Empty: every
    // layer slides. (Qwen's use_sliding_window spares the first max_window_layers layers.)
    std::vector<uint8_t> sliding_layers;
    int32_t bos_token_id = -1;         // -1 = none
    std::vector<int32_t> eos_token_ids;

    // The window layer `layer` attends within; 0 = unbounded.
    int64_t window_of(int64_t layer) const {
        if (sliding_layers.empty()) return sliding_window;
        return sliding_layers.at(size_t(layer)) ? sliding_window : 0;
    }
};

// Throws Error(PAGODA_ERR_FORMAT) naming `source` and the field when the numbers cannot describe
// a model (non-positive sizes, heads that do not divide, a head_dim that is odd for RoPE, ...).
void validate(const ModelConfig &config, const std::string &source);

// "llama", "mistral", "qwen2", "qwen3".
const char *architecture_name(Architecture a);

}  // namespace pagoda::model
