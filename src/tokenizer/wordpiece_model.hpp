// WordPiece (BERT): each pre-tokenized word is split greedily, longest piece first, from its
// start; pieces after the first carry the continuing-subword prefix ("##"). A word with a part
// no piece covers, or longer than max_input_chars_per_word characters, is the unknown token
// as a whole (Schuster & Nakajima 2012; Hugging Face's WordPiece model).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/token_model.hpp"

namespace pagoda::tok {

struct WordPieceOptions {
    std::string unk_token = "[UNK]";
    std::string continuing_subword_prefix = "##";
    size_t max_input_chars_per_word = 100;
};

class WordPieceModel final : public TokenModel {
public:
    // `where` names the model in messages ("tokenizer.json: model").
    WordPieceModel(Vocabulary vocab, WordPieceOptions options, std::string where);

    // Throws Error(PAGODA_ERR_FORMAT) for a word that needs the unknown token when the
    // vocabulary has none (Hugging Face fails the same way).
    void encode(std::string_view word, std::vector<int32_t> &out) const override;

    const WordPieceOptions &options() const { return options_; }
    const Vocabulary &vocabulary() const { return vocab_; }

private:
    int32_t unknown(std::string_view word) const;

    Vocabulary vocab_;
    WordPieceOptions options_;
    std::string where_;
    int32_t unk_id_ = -1;
    size_t longest_piece_ = 0;  // bytes: no lookup of a longer stretch can succeed
};

}  // namespace pagoda::tok
