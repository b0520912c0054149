// Byte-pair encoding of one pre-tokenized piece: start from its characters, then apply the
// merges in rank order (Sennrich et al. 2016, as Hugging Face's BPE model does it).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/token_model.hpp"

namespace pagoda::tok {

struct BpeOptions {
    std::string unk_token;             // "" = none: characters outside the vocabulary are dropped
    bool fuse_unk = false;             // consecutive unknowns become one
    bool byte_fallback = false;        // unknown characters become their "<0xNN>" tokens
    bool ignore_merges = false;        // a piece that is a token is taken whole (Llama 3)
    std::string continuing_subword_prefix;  // put on every symbol but a piece's first
    std::string end_of_word_suffix;         // put on a piece's last symbol
};

// Hashing that lets the vocabulary be searched with a string_view.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocabulary = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel final : public TokenModel {
public:
    // Throws Error(PAGODA_ERR_FORMAT) naming `where` for a merge whose parts or result are not in
    // the vocabulary.
    BpeModel(Vocabulary vocab, const std::vector<std::pair<std::string, std::string>> &merges,
             BpeOptions options, const std::string &where);

    // Appends the ids of `piece`. Safe from any thread.
    void encode(std::string_view piece, std::vector<int32_t> &out) const override;

    int32_t token_id(std::string_view token) const;  // -1 when absent
    const Vocabulary &vocabulary() const { return vocab_; }
    const BpeOptions &options() const { return options_; }

private:
    struct Merge {
        int32_t rank;
        int32_t result;
    };
    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
    void encode_word(std::string_view word, std::vector<int32_t> &out) const;
    void encode_uncached(std::string_view piece, std::vector<int32_t> &out) const;
    std::vector<int32_t> initial_symbols(std::string_view piece) const;

    Vocabulary vocab_;
    std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result
    BpeOptions options_;
    int32_t unk_id_ = -1;
    int32_t byte_ids_[256];  // "<0xNN>" ids for byte fallback, -1 where absent
    // SentencePiece-style vocabularies encode whole text as one piece (no pre-tokenizer). When no
    // token has a "▁" after another character, no merge can cross into a "▁" that follows a
    // non-"▁": the piece splits there into words, encoded (and cached) one by one, same result.
    bool split_at_metaspace_ = false;

    // Pieces repeat (words of a language): their ids are kept, up to kCacheLimit pieces.
    static constexpr size_t kCacheLimit = 65536;
    static constexpr size_t kCachedPieceMax = 128;  // bytes; longer pieces are rare and not kept
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace pagoda::tok
