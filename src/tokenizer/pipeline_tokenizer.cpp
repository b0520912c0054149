#include "tokenizer/pipeline_tokenizer.hpp"

#include "common/error.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

PipelineTokenizer::PipelineTokenizer(PipelineParts parts) : parts_(std::move(parts)) {
    const size_t n = parts_.tokens.size();
    parts_.defined.resize(n, false);
    special_.assign(n, false);
    byte_token_.assign(n, false);
    for (const AddedToken &t : parts_.added_tokens.tokens())
        if (t.special && t.id >= 0 && size_t(t.id) < n) special_[t.id] = true;
    if (parts_.byte_fallback)
        for (size_t id = 0; id < n; ++id)
            byte_token_[id] = !special_[id] && byte_fallback_value(parts_.tokens[id]) >= 0;
}

void PipelineTokenizer::encode_text(std::string_view text, bool at_text_start,
                                    std::vector<int32_t> &ids) const {
    if (text.empty()) return;
    std::vector<std::string> pieces{std::string(text)};
    if (parts_.pre_tokenizer) parts_.pre_tokenizer->pre_tokenize(pieces, at_text_start);
    for (const std::string &piece : pieces) parts_.model->encode(piece, ids);
}

void PipelineTokenizer::encode_segment(std::string_view raw, bool at_text_start, bool parse_special,
                                       std::vector<int32_t> &ids) const {
    std::string normalized(raw);
    if (parts_.normalizer) parts_.normalizer->normalize(normalized);
    if (!parts_.added_tokens.has_normalized()) {
        encode_text(normalized, at_text_start, ids);
        return;
    }
    // Added tokens marked `normalized` are looked for in the normalized text.
    std::vector<TextSegment> segments;
    parts_.added_tokens.split(normalized, true, parse_special, segments);
    for (const TextSegment &s : segments) {
        if (s.token >= 0) ids.push_back(s.token);
        else encode_text(s.text, at_text_start && s.text.data() == normalized.data(), ids);
    }
}

std::vector<int32_t> PipelineTokenizer::encode(std::string_view text, uint32_t flags) const {
    const bool parse_special = (flags & PAGODA_TOKENIZE_PARSE_SPECIAL) != 0;
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<TextSegment> segments;
    parts_.added_tokens.split(text, false, parse_special, segments);
    for (const TextSegment &s : segments) {
        if (s.token >= 0) ids.push_back(s.token);
        else encode_segment(s.text, s.text.data() == text.data(), parse_special, ids);
    }
    if (flags & PAGODA_TOKENIZE_ADD_SPECIAL) parts_.post_template.apply(ids);
    return ids;
}

std::string PipelineTokenizer::decode(std::span<const int32_t> ids, uint32_t flags) const {
    const bool skip_special = (flags & PAGODA_DETOKENIZE_SKIP_SPECIAL) != 0;
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (id < 0 || size_t(id) >= parts_.tokens.size() || !parts_.defined[id])
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) +
                                                         " is outside the vocabulary of " +
                                                         std::to_string(parts_.tokens.size()));
        if (skip_special && special_[id]) continue;
        tokens.push_back(parts_.tokens[id]);
    }
    std::string text;
    if (parts_.decoder) {
        parts_.decoder->decode_chain(tokens);
        for (const std::string &t : tokens) text += t;
    } else {
        for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
    }
    return is_valid_utf8(text) ? text : utf8_lossy(text);
}

std::string PipelineTokenizer::token_to_piece(int32_t id) const {
    if (id < 0 || size_t(id) >= parts_.tokens.size() || !parts_.defined[id])
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) +
                                                     " is outside the vocabulary of " +
                                                     std::to_string(parts_.tokens.size()));
    const std::string &token = parts_.tokens[id];
    if (special_[id]) return token;
    if (parts_.piece_style == PieceStyle::ByteLevel) {
        auto bytes = from_byte_level(token);
        return bytes ? *bytes : token;
    }
    if (byte_token_[id]) return std::string(1, char(byte_fallback_value(token)));
    if (parts_.piece_style == PieceStyle::WordPiece) {
        const std::string &prefix = parts_.subword_prefix;
        return !prefix.empty() && token.compare(0, prefix.size(), prefix) == 0 ? token.substr(prefix.size()) : token;
    }
    return TextPattern::literal(parts_.metaspace).replace_all(token, " ");
}

bool PipelineTokenizer::is_special(int32_t id) const {
    return id >= 0 && size_t(id) < special_.size() && special_[id];
}

bool PipelineTokenizer::is_byte_fallback(int32_t id) const {
    return id >= 0 && size_t(id) < byte_token_.size() && byte_token_[id];
}

}  // namespace pagoda::tok
