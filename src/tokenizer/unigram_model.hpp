// Unigram language model segmentation (Kudo 2018, "Subword Regularization", §3.1): of all
// ways to spell a piece with vocabulary pieces, the one whose log-probabilities (scores) sum
// highest, found by Viterbi. A character no piece starts with costs the lowest score minus 10
// and becomes the unknown token; neighbouring unknowns are fused into one. With byte_fallback,
// an unknown run is spelled in "<0xNN>" byte tokens instead, when all of its bytes have one.
// The search is SentencePiece's (unigram_model.cc, EncodeOptimized), which Hugging Face's
// Unigram model follows, ties included.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/token_model.hpp"

namespace pagoda::tok {

class UnigramModel final : public TokenModel {
public:
    // pieces[id] and scores[id]; `unk_id` -1 for none. Throws Error(PAGODA_ERR_FORMAT) naming
    // `where` for an empty vocabulary or an unk_id outside it.
    UnigramModel(const std::vector<std::string> &pieces, std::vector<double> scores, int32_t unk_id,
                 bool byte_fallback, std::string where);

    // Throws Error(PAGODA_ERR_FORMAT) for text that needs the unknown token when the model has
    // none (Hugging Face's MissingUnkId).
    void encode(std::string_view piece, std::vector<int32_t> &out) const override;

    const Vocabulary &vocabulary() const { return ids_; }

private:
    // A byte trie of the pieces, flat: node n's children are labels_/targets_[first_[n] ..
    // first_[n + 1]), sorted by label; piece_[n] is the id spelled by the path to n, or -1.
    struct Trie {
        std::vector<uint32_t> first;
        std::vector<int32_t> piece;
        std::vector<uint8_t> labels;
        std::vector<uint32_t> targets;
        int64_t child(uint32_t node, uint8_t label) const;
    };
    void build_trie();
    void emit(std::string_view text, int32_t id, bool unknown, std::vector<int32_t> &out) const;

    Trie trie_;
    Vocabulary ids_;  // piece -> id, the last id of a piece spelled twice (as Hugging Face's map)
    std::vector<double> scores_;
    double unk_score_ = 0.0;
    int32_t unk_id_;
    bool byte_fallback_;
    int32_t byte_ids_[256];
    std::string where_;
};

}  // namespace pagoda::tok
