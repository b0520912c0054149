#include "tokenizer/wordpiece_model.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

WordPieceModel::WordPieceModel(Vocabulary vocab, WordPieceOptions options, std::string where)
    : vocab_(std::move(vocab)), options_(std::move(options)), where_(std::move(where)) {
    const auto it = vocab_.find(options_.unk_token);
    if (it != vocab_.end()) unk_id_ = it->second;
    for (const auto &[token, id] : vocab_) longest_piece_ = std::max(longest_piece_, token.size());
}

int32_t WordPieceModel::unknown(std::string_view word) const {
    if (unk_id_ < 0)
        throw Error(PAGODA_ERR_FORMAT, where_ + ": \"" + std::string(word) + "\" needs the unknown token, but unk_token \"" +
                                           options_.unk_token + "\" is not in the vocabulary");
    return unk_id_;
}

void WordPieceModel::encode(std::string_view word, std::vector<int32_t> &out) const {
    if (word.empty()) return;
    // Character boundaries: the greedy search shortens a candidate one character at a time.
    std::vector<size_t> bounds;
    bounds.reserve(word.size() + 1);
    for (size_t pos = 0; pos < word.size(); pos += utf8_step(word, pos)) bounds.push_back(pos);
    bounds.push_back(word.size());
    const size_t chars = bounds.size() - 1;
    if (chars > options_.max_input_chars_per_word) {
        out.push_back(unknown(word));
        return;
    }
    const size_t first_out = out.size();
    const std::string &prefix = options_.continuing_subword_prefix;
    std::string key;
    for (size_t start = 0; start < chars;) {
        const size_t affix = start > 0 ? prefix.size() : 0;
        // The longest stretch from `start` that is a piece; none longer than the longest piece.
        size_t end = chars;
        while (end > start && bounds[end] - bounds[start] + affix > longest_piece_) --end;
        int32_t found = -1;
        for (; end > start; --end) {
            const std::string_view stretch = word.substr(bounds[start], bounds[end] - bounds[start]);
            Vocabulary::const_iterator it;
            if (affix == 0) {
                it = vocab_.find(stretch);
            } else {
                key.assign(prefix).append(stretch);
                it = vocab_.find(key);
            }
            if (it != vocab_.end()) {
                found = it->second;
                break;
            }
        }
        if (found < 0) {  // one uncovered part makes the whole word unknown
            out.resize(first_out);
            out.push_back(unknown(word));
            return;
        }
        out.push_back(found);
        start = end;
    }
}

}  // namespace pagoda::tok
