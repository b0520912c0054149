// One sequence's progress through a constraint: the stacks alive after the text it has
// generated, the tokens it may take next, and the step that takes one. Copying it forks the
// sequence (parallel sampling): each copy goes on alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "grammar/compiled_constraint.hpp"
#include "grammar/pushdown.hpp"
#include "grammar/token_mask.hpp"
#include "grammar/token_walk.hpp"

namespace pagoda::grammar {

class ConstraintMatcher {
public:
    explicit ConstraintMatcher(std::shared_ptr<const CompiledConstraint> constraint);

    // The tokens allowed next: text tokens the grammar can read, and the end tokens when the
    // text may end here. Valid until the next accept().
    const TokenMask &allowed();
    void fill_mask(TokenMask &mask) { mask = allowed(); }
    // Sets every logit the constraint does not allow to -inf. Throws
    // Error(PAGODA_ERR_INVALID_ARGUMENT) when it allows none (the vocabulary cannot spell what
    // the grammar needs next).
    void mask_logits(std::span<float> logits);
    // Takes the token: true when it was allowed (the state moves on), false when not (the state
    // stays). An end token is allowed when the text may end, and finishes the matcher.
    bool accept(int32_t token);

    // The text so far is a whole sentence of the grammar.
    bool can_end() const { return can_end_; }
    // Nothing may follow: the grammar is complete, or an end token was taken.
    bool finished() const { return ended_ || (live_.empty() && can_end_); }

private:
    void compute_allowed(TokenMask &mask);
    bool spell_state(std::vector<uint32_t> &state);
    void compact();

    std::shared_ptr<const CompiledConstraint> constraint_;
    Pushdown pushdown_;
    std::vector<uint32_t> live_;  // stacks, each with a bytes point on top
    bool can_end_ = false;
    bool ended_ = false;
    std::shared_ptr<const TokenMask> allowed_;  // for the state now, once asked
    // Scratch, reused step to step.
    std::vector<uint32_t> state_;
    std::vector<std::vector<uint32_t>> chains_;
    TokenWalker walker_;
    std::vector<uint32_t> ranks_;
    std::vector<int32_t> to_check_;
    std::vector<uint32_t> next_;
    std::vector<uint32_t> scratch_;
};

}  // namespace pagoda::grammar
