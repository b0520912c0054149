// A grammar joined to a vocabulary: what each token does from each place in the grammar,
// computed once and shared by every sequence under the constraint. The place is the top frame's
// point and its caller's point; from there a token is accepted or rejected for good, or it
// reads past the end of the caller's rule and only the sequence's whole stack can say (those
// few are checked per step; see ConstraintMatcher). Computed on first use of each place and
// kept, as XGrammar's adaptive token mask cache keeps its context-independent tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.hpp"
#include "grammar/pushdown.hpp"
#include "grammar/token_mask.hpp"
#include "grammar/token_vocabulary.hpp"

namespace pagoda::grammar {

// The tokens from one place: those accepted whatever the caller (a mask when they are many,
// else a list of ids) and those that depend on it, as ranks in the vocabulary's byte order (so
// the lists of several places merge into one walk).
struct PlaceTokens {
    bool dense = false;
    TokenMask accepted_mask;
    std::vector<int32_t> accepted_list;
    std::vector<uint32_t> depends_on_caller;
};

class CompiledConstraint {
public:
    CompiledConstraint(const Grammar &grammar, std::shared_ptr<const TokenVocabulary> vocabulary);

    const std::shared_ptr<const Points> &points() const { return points_; }
    const TokenVocabulary &vocabulary() const { return *vocabulary_; }

    // The tokens from a bytes point whose frame's caller is at `caller_point` (kBottom when the
    // frame is the root's). Thread-safe; the result lives as long as this object.
    const PlaceTokens &place_tokens(uint32_t point, uint32_t caller_point) const;
    // Places computed so far (for tests and statistics).
    size_t places_known() const;

    // The mask of a whole state, if known: `state` spells the live stacks (their points, top to
    // bottom, in a canonical order) and whether the text may end. Generation revisits states
    // (each character of a JSON string leaves the same stacks), so a state's mask is computed
    // once for every sequence under the constraint. Thread-safe.
    std::shared_ptr<const TokenMask> state_mask(const std::vector<uint32_t> &state) const;
    void remember_state_mask(const std::vector<uint32_t> &state,
                             std::shared_ptr<const TokenMask> mask) const;
    size_t states_known() const;

private:
    std::shared_ptr<const Points> points_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    mutable std::mutex mutex_;
    mutable std::unordered_map<uint64_t, std::unique_ptr<PlaceTokens>> places_;
    struct StateHash {
        size_t operator()(const std::vector<uint32_t> &v) const;
    };
    mutable std::unordered_map<std::vector<uint32_t>, std::shared_ptr<const TokenMask>, StateHash>
        states_;
};

}  // namespace pagoda::grammar
