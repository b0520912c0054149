// GGUF's tensor names for the Llama family ("blk.3.attn_q.weight") and the canonical (Hugging
// Face) names the core uses ("model.layers.3.self_attn.q_proj.weight"), both ways: the GGUF
// loader reads with them, the Hugging Face to GGUF conversion writes with them.
#pragma once

#include <string>
#include <string_view>

#include "model/model_config.hpp"

namespace pagoda::model {

// Where a few names mean different tensors. Llama's ffn_norm is post_attention_layernorm (the
// MLP's input norm); Gemma's is pre_feedforward_layernorm, beside post_attention_norm (the
// attention output's) and post_ffw_norm. Phi-3's ffn_up is the fused gate_up_proj.
enum class TensorNaming { Llama, Gemma, Phi3 };

// The naming of `config`'s architecture.
TensorNaming tensor_naming(const ModelConfig &config);

// The canonical name of GGUF tensor `gguf`; "" when the name means nothing to us.
std::string canonical_tensor_name(std::string_view gguf, TensorNaming naming);

// The GGUF name of canonical tensor `canonical`; "" when GGUF has no name for it.
std::string gguf_tensor_name(std::string_view canonical, TensorNaming naming);

}  // namespace pagoda::model
