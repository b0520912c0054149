// A Hugging Face config.json (and generation_config.json) read into a ModelConfig, for the
// Llama-family architectures Pagoda runs: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM.
#pragma once

#include <string>
#include <string_view>

#include "model/model_config.hpp"

namespace pagoda::model {

// Parses config.json's text; `source` names it in messages. The result has passed validate().
// Throws Error: FORMAT (not JSON, a required key missing, a key of the wrong JSON type, numbers
// that cannot describe a model), UNSUPPORTED (another architecture, activation or rope scaling).
ModelConfig parse_hf_config(std::string_view json_text, const std::string &source);

// Applies generation_config.json's bos_token_id and eos_token_id, where it gives them, over the
// ones config.json gave. Throws as parse_hf_config; the result has passed validate().
void apply_hf_generation_config(ModelConfig &config, std::string_view json_text,
                                const std::string &source);

}  // namespace pagoda::model
