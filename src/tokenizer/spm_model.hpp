// SentencePiece-style BPE as llama.cpp runs it on GGUF "llama" vocabularies: start from the UTF-8
// characters and keep merging the adjacent pair whose joined piece is in the vocabulary with the
// highest score; characters no piece covers become their "<0xNN>" byte tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/token_model.hpp"

namespace pagoda::tok {

class SpmModel final : public TokenModel {
public:
    // `mergeable[id]`: the piece may be formed from text (normal and user-defined pieces; not
    // control, byte or unused ones).
    SpmModel(const std::vector<std::string> &pieces, std::vector<float> scores,
             const std::vector<bool> &mergeable, int32_t unk_id);

    void encode(std::string_view piece, std::vector<int32_t> &out) const override;

private:
    Vocabulary piece_ids_;
    std::vector<float> scores_;
    int32_t byte_ids_[256];
    int32_t unk_id_;
};

}  // namespace pagoda::tok
