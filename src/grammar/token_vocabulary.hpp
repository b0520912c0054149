// A vocabulary as a constraint sees it: each token's bytes, the tokens in byte order (so tokens
// that share a prefix sit together and a walk over them shares the work of the prefix), and the
// end-of-sequence tokens, which a constraint allows exactly when its text may end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::grammar {

class TokenVocabulary {
public:
    // `bytes[id]` is what token `id` adds to the text; empty for tokens that are never text
    // (control and special tokens), which a constraint never allows. `end_ids` end the
    // sequence. Ids past `bytes` up to `logit_rows` (a model's padded vocabulary) are never
    // allowed either.
    TokenVocabulary(const std::vector<std::string> &bytes, std::vector<int32_t> end_ids,
                    int32_t logit_rows);

    int32_t logit_rows() const { return logit_rows_; }
    // Tokens with an entry in `bytes` (ids from 0).
    int32_t tokens() const { return int32_t(offsets_.size()) - 1; }
    std::string_view bytes(int32_t id) const {
        return std::string_view(text_).substr(offsets_[size_t(id)],
                                              offsets_[size_t(id) + 1] - offsets_[size_t(id)]);
    }
    // The ids with bytes, ordered by their bytes.
    std::span<const int32_t> sorted() const { return sorted_; }
    std::span<const int32_t> end_ids() const { return end_ids_; }
    bool is_end(int32_t id) const;

private:
    std::string text_;              // every token's bytes, back to back
    std::vector<uint32_t> offsets_; // id -> start in text_ (size tokens + 1)
    std::vector<int32_t> sorted_;
    std::vector<int32_t> end_ids_;
    int32_t logit_rows_ = 0;
};

}  // namespace pagoda::grammar
