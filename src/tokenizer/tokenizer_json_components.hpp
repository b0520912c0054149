// tokenizer.json's pipeline components read into Pagoda's: normalizer, pre_tokenizer, decoder and
// post_processor. A type this build does not implement is refused with
// Error(PAGODA_ERR_UNSUPPORTED) naming the field and the type; a malformed one with
// Error(PAGODA_ERR_FORMAT).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe_model.hpp"
#include "tokenizer/decoders.hpp"
#include "tokenizer/normalizers.hpp"
#include "tokenizer/post_processor.hpp"
#include "tokenizer/pre_tokenizers.hpp"
#include "tokenizer/tokenizer_json_field.hpp"

namespace pagoda::tok {

// What the components tell about the tokenizer as a whole.
struct Traits {
    bool byte_level = false;
};

std::unique_ptr<Normalizer> normalizer_of(const Field &f);
std::unique_ptr<PreTokenizer> pre_tokenizer_of(const Field &f, Traits &traits);
std::unique_ptr<Decoder> decoder_of(const Field &f, Traits &traits);

// A token's id from its text: added tokens first, then the model's vocabulary; -1 when neither
// has it.
struct TokenLookup {
    const Vocabulary &vocab;
    const std::vector<AddedToken> &added;
    int32_t find(const std::string &content) const;
};

SequenceTemplate post_processor_of(const Field &f, const TokenLookup &lookup);

}  // namespace pagoda::tok
