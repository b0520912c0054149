#include "engine/constraint_vocabulary.hpp"

#include <algorithm>

namespace pagoda::engine {

std::shared_ptr<const grammar::TokenVocabulary> constraint_vocabulary(const tok::Tokenizer &tokenizer,
                                                                      std::vector<int32_t> end_ids,
                                                                      int32_t logit_rows) {
    const int32_t n = std::min(tokenizer.vocab_size(), logit_rows);
    std::vector<std::string> bytes(size_t(std::max(n, 0)));
    for (int32_t id = 0; id < n; ++id) {
        if (!tokenizer.has_token(id) || tokenizer.is_special(id) || id == tokenizer.unk_token_id())
            continue;
        bytes[size_t(id)] = tokenizer.token_to_piece(id);
    }
    return std::make_shared<const grammar::TokenVocabulary>(bytes, std::move(end_ids), logit_rows);
}

}  // namespace pagoda::engine
