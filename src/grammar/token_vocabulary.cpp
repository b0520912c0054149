#include "grammar/token_vocabulary.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace pagoda::grammar {

TokenVocabulary::TokenVocabulary(const std::vector<std::string> &bytes, std::vector<int32_t> end_ids,
                                 int32_t logit_rows)
    : end_ids_(std::move(end_ids)), logit_rows_(logit_rows) {
    if (logit_rows < int32_t(bytes.size()))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the vocabulary has " + std::to_string(bytes.size()) +
                        " tokens but the logits only " + std::to_string(logit_rows) + " rows");
    offsets_.reserve(bytes.size() + 1);
    for (const std::string &b : bytes) {
        offsets_.push_back(uint32_t(text_.size()));
        text_ += b;
    }
    offsets_.push_back(uint32_t(text_.size()));
    for (int32_t id = 0; id < int32_t(bytes.size()); ++id)
        if (!bytes[size_t(id)].empty() && !is_end(id)) sorted_.push_back(id);
    std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
        const std::string_view x = this->bytes(a), y = this->bytes(b);
        return x != y ? x < y : a < b;
    });
    std::erase_if(end_ids_, [&](int32_t id) { return id < 0 || id >= logit_rows_; });
}

bool TokenVocabulary::is_end(int32_t id) const {
    return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

}  // namespace pagoda::grammar
