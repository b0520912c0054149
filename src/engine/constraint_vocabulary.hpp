// The tokenizer's vocabulary as constraints read it: each token's bytes (none for special,
// unknown and undefined tokens, which are never text), the model's end tokens, and the logit
// rows of the model (its embedding may have more rows than the tokenizer has tokens).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/token_vocabulary.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::engine {

std::shared_ptr<const grammar::TokenVocabulary> constraint_vocabulary(const tok::Tokenizer &tokenizer,
                                                                      std::vector<int32_t> end_ids,
                                                                      int32_t logit_rows);

}  // namespace pagoda::engine
