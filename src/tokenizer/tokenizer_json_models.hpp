// tokenizer.json's "model": BPE, Unigram or WordPiece, read into the TokenModel that runs it and
// the token table it defines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/pipeline_tokenizer.hpp"
#include "tokenizer/token_model.hpp"
#include "tokenizer/tokenizer_json_field.hpp"

namespace pagoda::tok {

struct ModelSpec {
    std::unique_ptr<TokenModel> model;
    const Vocabulary *vocab = nullptr;  // the model's token -> id map (owned by `model`)
    // Unigram's pieces, whose index is the id (a piece spelled twice keeps both ids); empty for
    // the models whose vocabulary is the map. The token table is made from either once the ids
    // are known to be dense enough to index one.
    std::vector<std::string> pieces;
    int32_t ids_end = 0;                // one past the largest id
    std::string unk_token;              // "" = none
    bool byte_fallback = false;
    // How tokens read as bytes; for BPE the pre-tokenizer and decoder decide (byte-level or not).
    PieceStyle piece_style = PieceStyle::Metaspace;
    bool piece_style_from_components = false;
    std::string subword_prefix;         // WordPiece's "##"
    std::string name;                   // model_name(): "" for BPE (by piece style), "unigram", "wordpiece"
};

// Throws Error: FORMAT naming the field, UNSUPPORTED for another model type or BPE dropout.
ModelSpec model_of(const Field &model);

}  // namespace pagoda::tok
