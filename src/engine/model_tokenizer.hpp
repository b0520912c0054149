// The tokenizer that goes with an opened model. Neither model/ nor tokenizer/ knows the other, so
// the two are composed here: engine/ is the lowest layer above both, the one that serves a model
// with its tokenizer, and it is reachable from capi/ (which holds no logic) and from internal tests.
#pragma once

#include <memory>

#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::engine {

// A Hugging Face folder's tokenizer.json (Tokenizer::from_file), or the vocabulary of a GGUF file
// (Tokenizer::from_gguf); NULL when the model carries none (it then serves token ids only).
// Throws what those throw.
std::shared_ptr<const tok::Tokenizer> open_model_tokenizer(const model::Model &model);

}  // namespace pagoda::engine
