// A model described by a GGUF file: its config from the `<architecture>.*` keys, its tensors under
// canonical (Hugging Face) names, and its vocabulary. Supported architectures: llama (also what
// Mistral GGUFs call themselves) and qwen2.
#pragma once

#include <string>

#include "model/gguf_file.hpp"
#include "model/gguf_vocabulary.hpp"
#include "model/model_config.hpp"
#include "model/tensor_table.hpp"

namespace pagoda::model {

struct GgufModel {
    GgufFile file;  // owns the mapping that `tensors` point into: keep it alive with them
    ModelConfig config;
    TensorTable tensors;
    GgufVocabulary vocabulary;
};

// Opens `path` and describes the model in it. Throws Error (every message begins with the path):
// what GgufFile throws; UNSUPPORTED for an architecture other than the supported ones (the
// message lists them) or a feature this build does not run; FORMAT naming the key for a missing
// or mistyped key, naming the tensor for a missing tensor or one whose shape disagrees with the
// config (with both shapes).
GgufModel open_gguf_model(const std::string &path);

// The steps of open_gguf_model, for callers that hold a GgufFile already.
ModelConfig gguf_model_config(const GgufFile &file);
TensorTable gguf_tensor_table(const GgufFile &file, const ModelConfig &config);

}  // namespace pagoda::model
