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

}  // namespace

ConstraintMatcher::ConstraintMatcher(std::shared_ptr<const CompiledConstraint> constraint)
    : constraint_(std::move(constraint)), pushdown_(constraint_->points()) {
    StepEnds ends;
    pushdown_.start(live_, ends);
    can_end_ = ends.accepted;
}

void ConstraintMatcher::fill_mask(TokenMask &mask) {
    const TokenVocabulary &vocabulary = constraint_->vocabulary();
    mask.reset(vocabulary.logit_rows());
    if (ended_) return;
    if (can_end_)
        for (int32_t id : vocabulary.end_ids()) mask.set(id);
    // Tokens settled by the place alone, then the rest against each stack in full.
    for (uint32_t stack : live_) {
        const uint32_t parent = pushdown_.parent_of(stack);
        const PlaceTokens &place = constraint_->place_tokens(
            pushdown_.point_of(stack), parent == kBottom ? kBottom : pushdown_.point_of(parent));
        if (place.dense)
            mask.merge(place.accepted_mask);
        else
            for (int32_t id : place.accepted_list) mask.set(id);
    }
    for (uint32_t stack : live_) {
        const uint32_t parent = pushdown_.parent_of(stack);
        const PlaceTokens &place = constraint_->place_tokens(
            pushdown_.point_of(stack), parent == kBottom ? kBottom : pushdown_.point_of(parent));
        to_check_.clear();
        for (int32_t id : place.depends_on_caller)
            if (!mask.test(id)) to_check_.push_back(id);
        if (to_check_.empty()) continue;
        walker_.run(pushdown_, vocabulary, stack, to_check_, [&](int32_t id, TokenVerdict v) {
            if (v == TokenVerdict::accepted) mask.set(id);
        });
    }
}

void ConstraintMatcher::mask_logits(std::span<float> logits) {
    fill_mask(mask_);
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    const std::span<const uint64_t> words = mask_.words();
    bool any = false;
    for (size_t w = 0; w < words.size(); ++w) {
        const uint64_t bits = words[w];
        const size_t first = w * 64, end = std::min(logits.size(), first + 64);
        if (bits == ~uint64_t{0} && end == first + 64) {
            any = true;
            continue;
        }
        for (size_t i = first; i < end; ++i)
            if (((bits >> (i - first)) & 1u) == 0) logits[i] = kMasked;
        any = any || bits != 0;
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
