// `pagoda quantize` of either source: a GGUF file as it is, or a Hugging Face folder converted on
// the way (model/hf_to_gguf.hpp for config and weights, tokenizer/hf_gguf_vocabulary.hpp for the
// tokenizer). Neither model/ nor tokenizer/ knows the other, so the two meet here, as they do
// for serving (model_tokenizer.hpp).
#pragma once

#include <string>

#include "model/gguf_quantize.hpp"

namespace pagoda::engine {

// Writes the quantized GGUF `output_path` from `input_path` (a GGUF file, or a Hugging Face folder
// of a Llama, Mistral, Qwen2/3, Gemma 2/3 or Phi-3 model with tokenizer.json). Nothing is
// written unless the whole input is understood. Throws what quantize_gguf, HfCheckpoint, gguf_vocabulary_from_hf and
// hf_quantize_source throw.
model::QuantizeSummary quantize_model(const std::string &input_path, const std::string &output_path,
                                      model::QuantMix mix, int threads, const model::ProgressFn &progress);

}  // namespace pagoda::engine
