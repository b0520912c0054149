// Runs many tokens through the pushdown automaton from one stack, in byte order, so a token
// resumes from the stacks its predecessor reached at their common prefix (XGrammar's walk over
// the sorted vocabulary): a 128k vocabulary costs about its distinct prefixes, not its bytes.
#pragma once

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/pushdown.hpp"
#include "grammar/token_vocabulary.hpp"

namespace pagoda::grammar {

enum class TokenVerdict : uint8_t {
    accepted,           // every byte of the token can be read
    rejected,           // some byte cannot, whatever called the start frame's rule
    depends_on_caller,  // it reads to the end of the start frame's rule and needs the caller
};

class TokenWalker {
public:
    // Calls verdict(id, TokenVerdict) for each of `tokens` (ids in the vocabulary's byte order)
    // read from the stacks `start` (a token is accepted when some stack accepts it).
    template <class Verdict>
    void run(Pushdown &pushdown, const TokenVocabulary &vocabulary, std::span<const uint32_t> start,
             std::span<const int32_t> tokens, Verdict &&verdict) {
        reserve(1);
        levels_[0].assign(start.begin(), start.end());
        std::string_view previous;
        size_t valid = 0;  // levels_[0..valid] hold for `previous`
        for (int32_t id : tokens) {
            const std::string_view bytes = vocabulary.bytes(id);
            size_t depth = std::min(common_prefix(previous, bytes), valid);
            reserve(bytes.size() + 1);
            while (depth < bytes.size() && !levels_[depth].empty()) {
                StepEnds ends;
                pushdown.step(levels_[depth], static_cast<uint8_t>(bytes[depth]), levels_[depth + 1], ends);
                ++depth;
                completed_[depth] = ends.accepted || ends.reached_caller;
                caller_[depth] = caller_[depth - 1] || ends.reached_caller;
            }
            valid = depth;
            previous = bytes;
            if (depth == bytes.size() && (!levels_[depth].empty() || completed_[depth]))
                verdict(id, TokenVerdict::accepted);
            else
                verdict(id, caller_[depth] ? TokenVerdict::depends_on_caller : TokenVerdict::rejected);
        }
    }

private:
    static size_t common_prefix(std::string_view a, std::string_view b) {
        const size_t n = std::min(a.size(), b.size());
        size_t i = 0;
        while (i < n && a[i] == b[i]) ++i;
        return i;
    }
    void reserve(size_t levels) {
        if (levels_.size() >= levels) return;
        levels_.resize(levels);
        completed_.resize(levels, 0);
        caller_.resize(levels, 0);
    }

    std::vector<std::vector<uint32_t>> levels_;  // stacks after each prefix length
    std::vector<char> completed_;  // a parse ended (the root, or the start rule) on that byte
    std::vector<char> caller_;     // a parse reached the caller on or before that byte
};

}  // namespace pagoda::grammar
