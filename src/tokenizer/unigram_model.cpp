#include "tokenizer/unigram_model.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>

#include "common/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {
// SentencePiece's kUnkPenalty: an unknown character scores this far below the rarest piece.
constexpr double kUnknownPenalty = 10.0;
}  // namespace

int64_t UnigramModel::Trie::child(uint32_t node, uint8_t label) const {
    const auto begin = labels.begin() + first[node], end = labels.begin() + first[node + 1];
    const auto it = std::lower_bound(begin, end, label);
    return it == end || *it != label ? -1 : int64_t(targets[size_t(it - labels.begin())]);
}

void UnigramModel::build_trie() {
    std::vector<std::string_view> sorted;
    sorted.reserve(ids_.size());
    for (const auto &[piece, id] : ids_)
        if (!piece.empty()) sorted.push_back(piece);
    std::sort(sorted.begin(), sorted.end());
    // Breadth first, so that each node's edges are laid out together and in node order. A
    // queued node covers sorted[lo, hi), the pieces that share its first `depth` bytes.
    struct Pending {
        size_t lo, hi, depth;
    };
    std::deque<Pending> queue{{0, sorted.size(), 0}};
    while (!queue.empty()) {
        auto [lo, hi, depth] = queue.front();
        queue.pop_front();
        trie_.first.push_back(uint32_t(trie_.labels.size()));
        trie_.piece.push_back(-1);
        if (lo < hi && sorted[lo].size() == depth) trie_.piece.back() = ids_.find(sorted[lo++])->second;
        while (lo < hi) {
            const uint8_t label = uint8_t(sorted[lo][depth]);
            size_t group_end = lo + 1;
            while (group_end < hi && uint8_t(sorted[group_end][depth]) == label) ++group_end;
            trie_.labels.push_back(label);
            trie_.targets.push_back(uint32_t(trie_.piece.size() + queue.size()));
            queue.push_back({lo, group_end, depth + 1});
            lo = group_end;
        }
    }
    trie_.first.push_back(uint32_t(trie_.labels.size()));
}

UnigramModel::UnigramModel(const std::vector<std::string> &pieces, std::vector<double> scores, int32_t unk_id,
                           bool byte_fallback, std::string where)
    : scores_(std::move(scores)), unk_id_(unk_id), byte_fallback_(byte_fallback), where_(std::move(where)) {
    if (pieces.empty()) throw Error(PAGODA_ERR_FORMAT, where_ + ".vocab is empty");
    if (unk_id_ >= int64_t(pieces.size()))
        throw Error(PAGODA_ERR_FORMAT, where_ + ".unk_id = " + std::to_string(unk_id_) + " is outside the vocabulary of " +
                                           std::to_string(pieces.size()) + " pieces");
    scores_.resize(pieces.size(), 0.0);
    ids_.reserve(pieces.size());
    for (size_t id = 0; id < pieces.size(); ++id) ids_.insert_or_assign(pieces[id], int32_t(id));
    unk_score_ = *std::min_element(scores_.begin(), scores_.end()) - kUnknownPenalty;
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = ids_.find(std::string_view(name));
        byte_ids_[b] = it == ids_.end() ? -1 : it->second;
    }
    build_trie();
}

void UnigramModel::emit(std::string_view text, int32_t id, bool unknown, std::vector<int32_t> &out) const {
    if (!unknown) {
        out.push_back(id);
        return;
    }
    // A fused run of unknowns is looked up whole, as Hugging Face maps every result by its text.
    const auto it = ids_.find(text);
    if (it != ids_.end()) {
        out.push_back(it->second);
        return;
    }
    if (byte_fallback_ && std::all_of(text.begin(), text.end(), [&](char c) { return byte_ids_[uint8_t(c)] >= 0; })) {
        for (char c : text) out.push_back(byte_ids_[uint8_t(c)]);
        return;
    }
    out.push_back(unk_id_);
}

void UnigramModel::encode(std::string_view text, std::vector<int32_t> &out) const {
    if (text.empty()) return;
    const size_t n = text.size();
    // best[end]: the best spelling of text[0, end) ends with the piece text[start, end).
    struct Best {
        double score = 0.0;
        size_t start = 0;
        int32_t id = -1;
        bool reached = false;
    };
    std::vector<Best> best(n + 1);
    auto relax = [&](size_t end, double score, size_t start, int32_t id) {
        Best &b = best[end];
        if (!b.reached || score > b.score) b = {score, start, id, true};  // a tie keeps the first
    };
    for (size_t start = 0; start < n;) {
        const double base = best[start].score;
        const size_t step = utf8_step(text, start);
        bool single_character = false;
        uint32_t node = 0;
        for (size_t pos = start; pos < n; ++pos) {
            const int64_t next = trie_.child(node, uint8_t(text[pos]));
            if (next < 0) break;
            node = uint32_t(next);
            const int32_t id = trie_.piece[node];
            if (id < 0) continue;
            relax(pos + 1, scores_[size_t(id)] + base, start, id);
            single_character = single_character || pos + 1 - start == step;
        }
        if (!single_character) {
            if (unk_id_ < 0)
                throw Error(PAGODA_ERR_FORMAT, where_ + ": \"" + std::string(text.substr(start, step)) +
                                                   "\" is in no piece and the model has no unk_id");
            relax(start + step, unk_score_ + base, start, unk_id_);
        }
        start += step;
    }
    // Back from the end; neighbouring unknowns join into one stretch.
    struct Span {
        size_t begin, end;
        int32_t id;
        bool unknown;
    };
    std::vector<Span> spans;
    for (size_t end = n; end > 0;) {
        const Best &b = best[end];
        const bool unknown = unk_id_ >= 0 && b.id == unk_id_;
        if (unknown && !spans.empty() && spans.back().unknown) spans.back().begin = b.start;
        else spans.push_back({b.start, end, b.id, unknown});
        end = b.start;
    }
    for (auto it = spans.rbegin(); it != spans.rend(); ++it)
        emit(text.substr(it->begin, it->end - it->begin), it->id, it->unknown, out);
}

}  // namespace pagoda::tok
