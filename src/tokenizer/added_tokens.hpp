// Added tokens (Hugging Face's AddedVocabulary; GGUF's control and user-defined tokens): found
// in the text before anything else, so "<|eot_id|>" is one token rather than pieces of text.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::tok {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool special = false;      // a control token: matched only when asked to parse specials
    bool lstrip = false;       // swallows the whitespace on its left
    bool rstrip = false;       // swallows the whitespace on its right
    bool single_word = false;  // matched only where it is not part of a longer word
    bool normalized = false;   // matched in the normalized text rather than the input
};

// A stretch of the input: an added token, or text to normalize and encode.
struct TextSegment {
    std::string_view text;
    int32_t token = -1;  // the added token's id, or -1 for text
};

class AddedTokens {
public:
    AddedTokens() = default;
    explicit AddedTokens(std::vector<AddedToken> tokens);

    // Splits `text` on the tokens whose `normalized` flag equals `normalized` (special ones only
    // with `parse_special`), leftmost first and the longest where several start at one place.
    void split(std::string_view text, bool normalized, bool parse_special,
               std::vector<TextSegment> &out) const;

    bool empty() const { return tokens_.empty(); }
    bool has_normalized() const { return has_normalized_; }
    const std::vector<AddedToken> &tokens() const { return tokens_; }

private:
    std::vector<AddedToken> tokens_;
    // Indexes of tokens by first byte, longest first, so the first that matches is the longest.
    std::array<std::vector<uint32_t>, 256> by_first_byte_;
    bool has_normalized_ = false;
};

}  // namespace pagoda::tok
