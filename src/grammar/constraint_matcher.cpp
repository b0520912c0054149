#include "grammar/constraint_matcher.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "common/error.hpp"

namespace pagoda::grammar {

namespace {

// Checking tokens against the whole stack makes frames that outlive the check; past this many
// the automaton is rebuilt from the live stacks alone.
constexpr size_t kCompactAbove = 1u << 16;
// States spelled longer than this (deep recursion) are not cached: the key would cost more
// than it saves.
constexpr size_t kMaxStateWords = 4096;
constexpr uint32_t kChainEnd = UINT32_MAX;

}  // namespace

ConstraintMatcher::ConstraintMatcher(std::shared_ptr<const CompiledConstraint> constraint)
    : constraint_(std::move(constraint)), pushdown_(constraint_->points()) {
    StepEnds ends;
    pushdown_.start(live_, ends);
    can_end_ = ends.accepted;
}

const TokenMask &ConstraintMatcher::allowed() {
    if (allowed_) return *allowed_;
    const bool cacheable = spell_state(state_);
    if (cacheable) allowed_ = constraint_->state_mask(state_);
    if (!allowed_) {
        auto mask = std::make_shared<TokenMask>();
        compute_allowed(*mask);
        if (cacheable) constraint_->remember_state_mask(state_, mask);
        allowed_ = std::move(mask);
    }
    return *allowed_;
}

// The state in words independent of this automaton's frame ids: the flags, then each stack's
// points from top to bottom, stacks in sorted order. False when it would be too long to key.
bool ConstraintMatcher::spell_state(std::vector<uint32_t> &state) {
    state.assign({uint32_t(can_end_), uint32_t(ended_)});
    size_t words = state.size();
    std::vector<std::vector<uint32_t>> &chains = chains_;
    chains.resize(live_.size());
    for (size_t i = 0; i < live_.size(); ++i) {
        chains[i].clear();
        for (uint32_t id = live_[i]; id != kBottom; id = pushdown_.parent_of(id)) {
            chains[i].push_back(pushdown_.point_of(id));
            if (++words > kMaxStateWords) return false;
        }
    }
    std::sort(chains.begin(), chains.end());
    for (const std::vector<uint32_t> &chain : chains) {
        state.insert(state.end(), chain.begin(), chain.end());
        state.push_back(kChainEnd);
    }
    return true;
}

void ConstraintMatcher::compute_allowed(TokenMask &mask) {
    const TokenVocabulary &vocabulary = constraint_->vocabulary();
    mask.reset(vocabulary.logit_rows());
    if (ended_) return;
    if (can_end_)
        for (int32_t id : vocabulary.end_ids()) mask.set(id);
    // Tokens settled by the place alone; then the rest, merged over the places, in one walk from
    // every live stack (stacks of one character class's alternatives share their doubts).
    ranks_.clear();
    for (uint32_t stack : live_) {
        const uint32_t parent = pushdown_.parent_of(stack);
        const PlaceTokens &place = constraint_->place_tokens(
            pushdown_.point_of(stack), parent == kBottom ? kBottom : pushdown_.point_of(parent));
        if (place.dense)
            mask.merge(place.accepted_mask);
        else
            for (int32_t id : place.accepted_list) mask.set(id);
        ranks_.insert(ranks_.end(), place.depends_on_caller.begin(), place.depends_on_caller.end());
    }
    if (ranks_.empty()) return;
    std::sort(ranks_.begin(), ranks_.end());
    ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
    to_check_.clear();
    const std::span<const int32_t> sorted = vocabulary.sorted();
    for (uint32_t rank : ranks_)
        if (!mask.test(sorted[rank])) to_check_.push_back(sorted[rank]);
    walker_.run(pushdown_, vocabulary, live_, to_check_, [&](int32_t id, TokenVerdict v) {
        if (v == TokenVerdict::accepted) mask.set(id);
    });
}

void ConstraintMatcher::mask_logits(std::span<float> logits) {
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    const std::span<const uint64_t> words = allowed().words();
    bool any = false;
    // Word by word: a full word leaves its 64 logits, an empty one masks them all, a mixed one
    // masks its clear bits (few in a permissive mask such as a string's characters).
    for (size_t w = 0; w < words.size(); ++w) {
        const uint64_t bits = words[w];
        const size_t first = w * 64, end = std::min(logits.size(), first + 64);
        any = any || bits != 0;
        if (end - first < 64) {
            for (size_t i = first; i < end; ++i)
                if (((bits >> (i - first)) & 1u) == 0) logits[i] = kMasked;
        } else if (bits == 0) {
            std::fill(logits.begin() + std::ptrdiff_t(first), logits.begin() + std::ptrdiff_t(end), kMasked);
        } else {
            for (uint64_t clear = ~bits; clear != 0; clear &= clear - 1)
                logits[first + size_t(__builtin_ctzll(clear))] = kMasked;
        }
    }
    for (size_t i = words.size() * 64; i < logits.size(); ++i) logits[i] = kMasked;
    if (!any)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "the constraint allows no token here: the vocabulary cannot spell what the "
                    "grammar needs next");
}

bool ConstraintMatcher::accept(int32_t token) {
    const TokenVocabulary &vocabulary = constraint_->vocabulary();
    if (ended_ || token < 0 || token >= vocabulary.logit_rows()) return false;
    if (vocabulary.is_end(token)) {
        if (!can_end_) return false;
        ended_ = true;
        live_.clear();
        allowed_.reset();
        return true;
    }
    if (token >= vocabulary.tokens()) return false;
    const std::string_view bytes = vocabulary.bytes(token);
    if (bytes.empty()) return false;
    StepEnds ends;
    scratch_.assign(live_.begin(), live_.end());
    for (char c : bytes) {
        if (scratch_.empty()) return false;
        ends = {};
        pushdown_.step(scratch_, static_cast<uint8_t>(c), next_, ends);
        scratch_.swap(next_);
    }
    if (scratch_.empty() && !ends.accepted) return false;
    live_.swap(scratch_);
    can_end_ = ends.accepted;
    allowed_.reset();
    if (pushdown_.frame_count() > kCompactAbove) compact();
    return true;
}

// Rebuilds the automaton with the live stacks' frames only (shared bottoms stay shared).
void ConstraintMatcher::compact() {
    Pushdown fresh(constraint_->points());
    std::unordered_map<uint32_t, uint32_t> moved = {{kBottom, kBottom}};
    std::vector<uint32_t> chain;
    for (uint32_t &stack : live_) {
        chain.clear();
        uint32_t id = stack;
        while (!moved.count(id)) {
            chain.push_back(id);
            id = pushdown_.parent_of(id);
        }
        for (size_t i = chain.size(); i-- > 0;) {
            const uint32_t parent = moved.at(pushdown_.parent_of(chain[i]));
            moved[chain[i]] = fresh.frame(pushdown_.point_of(chain[i]), parent);
        }
        stack = moved.at(stack);
    }
    std::sort(live_.begin(), live_.end());
    pushdown_ = std::move(fresh);
}

}  // namespace pagoda::grammar
