#include "tokenizer/bpe_model.hpp"

#include <cstdio>
#include <queue>

#include "common/error.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {
constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // "▁"
}  // namespace

BpeModel::BpeModel(Vocabulary vocab, const std::vector<std::pair<std::string, std::string>> &merges,
                   BpeOptions options, const std::string &where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
    auto id_of = [&](const std::string &token, size_t rank) {
        const auto it = vocab_.find(token);
        if (it == vocab_.end())
            throw Error(PAGODA_ERR_FORMAT, where + ": merges[" + std::to_string(rank) +
                                               "] uses \"" + token + "\", which is not in the vocabulary");
        return it->second;
    };
    merges_.reserve(merges.size());
    const size_t prefix = options_.continuing_subword_prefix.size();
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto &[a, b] = merges[rank];
        // The right part loses its continuation prefix in the merged token ("##b" + "##c" -> "##bc").
        const bool has_prefix = prefix > 0 && b.compare(0, prefix, options_.continuing_subword_prefix) == 0;
        const std::string merged = a + (has_prefix ? b.substr(prefix) : b);
        // The first rank wins when a pair is listed twice, as in Hugging Face.
        const int32_t left = id_of(a, rank), right = id_of(b, rank), result = id_of(merged, rank);
        merges_.emplace(pair_key(left, right), Merge{int32_t(rank), result});
    }
    if (!options_.unk_token.empty()) {
        const auto it = vocab_.find(options_.unk_token);
        if (it == vocab_.end())
            throw Error(PAGODA_ERR_FORMAT, where + ": unk_token \"" + options_.unk_token +
                                               "\" is not in the vocabulary");
        unk_id_ = it->second;
    }
    // (Word affixes mark piece ends, so they rule the split out.)
    split_at_metaspace_ = options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty();
    for (const auto &entry : vocab_) {
        const std::string &token = entry.first;
        for (size_t pos = token.find(kMetaspace, 1); pos != std::string::npos && split_at_metaspace_;
             pos = token.find(kMetaspace, pos + 1))
            split_at_metaspace_ = pos >= kMetaspace.size() &&
                                  token.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0;
        if (!split_at_metaspace_) break;
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_ids_[b] = options_.byte_fallback ? token_id(name) : -1;
    }
}

int32_t BpeModel::token_id(std::string_view token) const {
    const auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
}

std::vector<int32_t> BpeModel::initial_symbols(std::string_view piece) const {
    std::vector<int32_t> symbols;
    symbols.reserve(piece.size());
    bool previous_unknown = false;
    std::string symbol;
    for (size_t pos = 0; pos < piece.size();) {
        const size_t n = utf8_step(piece, pos);
        symbol.clear();
        if (pos > 0) symbol += options_.continuing_subword_prefix;
        symbol.append(piece.substr(pos, n));
        if (pos + n == piece.size()) symbol += options_.end_of_word_suffix;
        const int32_t id = token_id(symbol);
        if (id >= 0) {
            symbols.push_back(id);
            previous_unknown = false;
        } else {
            bool all_bytes = options_.byte_fallback;
            for (size_t i = 0; all_bytes && i < n; ++i)
                all_bytes = byte_ids_[static_cast<unsigned char>(piece[pos + i])] >= 0;
            if (all_bytes) {
                for (size_t i = 0; i < n; ++i) symbols.push_back(byte_ids_[static_cast<unsigned char>(piece[pos + i])]);
                previous_unknown = false;
            } else if (unk_id_ >= 0) {
                if (!(options_.fuse_unk && previous_unknown)) symbols.push_back(unk_id_);
                previous_unknown = true;
            }
        }
        pos += n;
    }
    return symbols;
}

void BpeModel::encode_uncached(std::string_view piece, std::vector<int32_t> &out) const {
    if (options_.ignore_merges) {
        const int32_t whole = token_id(piece);
        if (whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    // Symbols form a doubly linked list; candidate merges wait in a heap ordered by rank, then
    // position, and are checked when popped (their symbols may have merged since).
    std::vector<int32_t> id = initial_symbols(piece);
    const int n = int(id.size());
    std::vector<int> prev(n), next(n);
    for (int i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    struct Candidate {
        int32_t rank;
        int left;
        int32_t left_id, right_id;
        bool operator>(const Candidate &o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto consider = [&](int left) {
        if (left < 0 || next[left] < 0) return;
        const auto it = merges_.find(pair_key(id[left], id[next[left]]));
        if (it != merges_.end()) heap.push({it->second.rank, left, id[left], id[next[left]]});
    };
    for (int i = 0; i + 1 < n; ++i) consider(i);
    std::vector<bool> alive(n, true);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const int right = next[c.left];
        if (!alive[c.left] || right < 0 || id[c.left] != c.left_id || id[right] != c.right_id) continue;
        id[c.left] = merges_.at(pair_key(c.left_id, c.right_id)).result;
        alive[right] = false;
        next[c.left] = next[right];
        if (next[right] >= 0) prev[next[right]] = c.left;
        consider(prev[c.left]);
        consider(c.left);
    }
    for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(id[i]);
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t> &out) const {
    if (!split_at_metaspace_) {
        encode_word(piece, out);
        return;
    }
    size_t begin = 0;
    for (size_t pos = piece.find(kMetaspace, 1); pos != std::string_view::npos;
         pos = piece.find(kMetaspace, pos + 1)) {
        if (pos >= kMetaspace.size() && piece.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0)
            continue;
        encode_word(piece.substr(begin, pos - begin), out);
        begin = pos;
    }
    encode_word(piece.substr(begin), out);
}

void BpeModel::encode_word(std::string_view piece, std::vector<int32_t> &out) const {
    if (piece.empty()) return;
    const bool cacheable = piece.size() <= kCachedPieceMax;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        const auto it = cache_.find(piece);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t first = out.size();
    encode_uncached(piece, out);
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kCacheLimit) cache_.clear();  // a crude bound, but never unbounded
        cache_.emplace(std::string(piece), std::vector<int32_t>(out.begin() + first, out.end()));
    }
}

}  // namespace pagoda::tok
