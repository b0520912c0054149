// One bit per token: which tokens a constraint allows next.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::grammar {

class TokenMask {
public:
    // All clear, for `tokens` tokens.
    void reset(int32_t tokens) {
        tokens_ = tokens;
        words_.assign((size_t(tokens) + 63) / 64, 0);
    }
    int32_t size() const { return tokens_; }
    void set(int32_t id) { words_[size_t(id) >> 6] |= uint64_t{1} << (id & 63); }
    bool test(int32_t id) const { return (words_[size_t(id) >> 6] >> (id & 63)) & 1u; }
    void merge(const TokenMask &other) {
        for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    }
    std::span<const uint64_t> words() const { return words_; }
    int32_t count() const {
        int32_t n = 0;
        for (uint64_t w : words_) n += __builtin_popcountll(w);
        return n;
    }

private:
    std::vector<uint64_t> words_;
    int32_t tokens_ = 0;
};

}  // namespace pagoda::grammar
