// A tokenizer assembled the way Hugging Face's tokenizers library runs one: added tokens split
// out, then normalizer, pre-tokenizer and model on the text between them, then the post-processor
// template; decoding runs the decoder chain. tokenizer.json files and GGUF vocabularies both
// build one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/decoders.hpp"
#include "tokenizer/normalizers.hpp"
#include "tokenizer/post_processor.hpp"
#include "tokenizer/pre_tokenizers.hpp"
#include "tokenizer/token_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::tok {

// How each token reads as bytes (token_to_piece).
enum class PieceStyle {
    ByteLevel,    // GPT-2 symbols stand for bytes
    Metaspace,    // "▁" is a space and "<0xNN>" a byte (SentencePiece)
    WordPiece,    // the continuing-subword prefix ("##") is dropped; other tokens read as written
};

struct PipelineParts {
    std::vector<std::string> tokens;  // the text of each id ("" where no token has the id)
    std::vector<bool> defined;        // whether an id has a token
    AddedTokens added_tokens;
    std::unique_ptr<Normalizer> normalizer;      // may be null
    std::unique_ptr<PreTokenizer> pre_tokenizer; // may be null
    std::unique_ptr<TokenModel> model;
    SequenceTemplate post_template;              // applied with PAGODA_TOKENIZE_ADD_SPECIAL
    std::unique_ptr<Decoder> decoder;            // null: tokens joined with spaces
    PieceStyle piece_style = PieceStyle::ByteLevel;
    std::string metaspace = "\xE2\x96\x81";      // "▁"
    std::string subword_prefix = "##";           // PieceStyle::WordPiece's prefix
    std::string model_name;                      // "" = by piece_style: "bpe" or "spm"
    bool byte_fallback = false;                  // "<0xNN>" tokens are bytes of unfinished text
    int32_t bos = -1, eos = -1, unk = -1, pad = -1;
};

class PipelineTokenizer final : public Tokenizer {
public:
    explicit PipelineTokenizer(PipelineParts parts);

    std::vector<int32_t> encode(std::string_view text, uint32_t flags) const override;
    std::string decode(std::span<const int32_t> ids, uint32_t flags) const override;
    std::string token_to_piece(int32_t id) const override;
    bool is_special(int32_t id) const override;
    bool is_byte_fallback(int32_t id) const override;
    bool has_token(int32_t id) const override {
        return id >= 0 && size_t(id) < parts_.tokens.size() && parts_.defined[size_t(id)];
    }
    int32_t vocab_size() const override { return int32_t(parts_.tokens.size()); }
    int32_t bos_token_id() const override { return parts_.bos; }
    int32_t eos_token_id() const override { return parts_.eos; }
    int32_t unk_token_id() const override { return parts_.unk; }
    int32_t pad_token_id() const override { return parts_.pad; }
    const char *model_name() const override {
        if (!parts_.model_name.empty()) return parts_.model_name.c_str();
        return parts_.piece_style == PieceStyle::ByteLevel ? "bpe" : "spm";
    }

private:
    void encode_text(std::string_view text, bool at_text_start, std::vector<int32_t> &ids) const;
    void encode_segment(std::string_view raw, bool at_text_start, bool parse_special,
                        std::vector<int32_t> &ids) const;

    PipelineParts parts_;
    std::vector<bool> special_;      // per id
    std::vector<bool> byte_token_;   // per id: a "<0xNN>" byte-fallback token
};

}  // namespace pagoda::tok
