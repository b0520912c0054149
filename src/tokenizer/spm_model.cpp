#include "tokenizer/spm_model.hpp"

#include <cstdio>
#include <queue>

#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

SpmModel::SpmModel(const std::vector<std::string> &pieces, std::vector<float> scores,
                   const std::vector<bool> &mergeable, int32_t unk_id)
    : scores_(std::move(scores)), unk_id_(unk_id) {
    scores_.resize(pieces.size(), 0.0f);
    for (size_t id = 0; id < pieces.size(); ++id)
        if (mergeable[id]) piece_ids_.emplace(pieces[id], int32_t(id));  // the first id wins
    Vocabulary all;
    for (size_t id = 0; id < pieces.size(); ++id) all.emplace(pieces[id], int32_t(id));
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = all.find(std::string_view(name));
        byte_ids_[b] = it == all.end() ? -1 : it->second;
    }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t> &out) const {
    struct Symbol {
        int prev, next;
        size_t begin, length;  // bytes of `text`; length 0 once merged into its left neighbour
    };
    std::vector<Symbol> symbols;
    for (size_t pos = 0; pos < text.size();) {
        const size_t n = utf8_step(text, pos);
        const int index = int(symbols.size());
        symbols.push_back({index - 1, -1, pos, n});
        if (index > 0) symbols[index - 1].next = index;
        pos += n;
    }
    // The highest score first; on a tie the leftmost pair (llama.cpp's llm_bigram_spm order).
    struct Bigram {
        int left, right;
        float score;
        size_t length;  // bytes of the joined piece, to notice that a side has changed
        bool operator<(const Bigram &o) const { return score != o.score ? score < o.score : left > o.left; }
    };
    std::priority_queue<Bigram> queue;
    auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t length = symbols[left].length + symbols[right].length;
        const auto it = piece_ids_.find(text.substr(symbols[left].begin, length));
        if (it != piece_ids_.end()) queue.push({left, right, scores_[it->second], length});
    };
    for (size_t i = 1; i < symbols.size(); ++i) try_pair(int(i) - 1, int(i));
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol &left = symbols[b.left];
        Symbol &right = symbols[b.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = b.left;
        try_pair(left.prev, b.left);
        try_pair(b.left, left.next);
    }
    for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].begin, symbols[i].length);
        const auto it = piece_ids_.find(piece);
        if (it != piece_ids_.end()) {
            out.push_back(it->second);
            continue;
        }
        // Only single characters can be missing (merges make known pieces): spell them in bytes.
        bool all_bytes = true;
        for (char c : piece) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
        if (all_bytes) {
            for (char c : piece) out.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        } else if (unk_id_ >= 0) {
            out.push_back(unk_id_);
        }
    }
}

}  // namespace pagoda::tok
