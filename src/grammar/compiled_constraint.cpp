#include "grammar/compiled_constraint.hpp"

#include "grammar/token_walk.hpp"

namespace pagoda::grammar {

namespace {

// Past this share of the vocabulary, a place's accepted tokens are kept as a mask: OR-ing the
// mask's words beats setting each bit.
constexpr int32_t kDenseShare = 64;

}  // namespace

CompiledConstraint::CompiledConstraint(const Grammar &grammar,
                                       std::shared_ptr<const TokenVocabulary> vocabulary)
    : points_(std::make_shared<const Points>(grammar)), vocabulary_(std::move(vocabulary)) {}

const PlaceTokens &CompiledConstraint::place_tokens(uint32_t point, uint32_t caller_point) const {
    const uint64_t key = (uint64_t{point} << 32) | caller_point;
    std::lock_guard lock(mutex_);
    auto known = places_.find(key);
    if (known != places_.end()) return *known->second;

    // A scratch automaton: the frames it makes mean nothing outside this computation.
    Pushdown pushdown(points_);
    const uint32_t caller =
        caller_point == kBottom ? kBottom : pushdown.frame(caller_point, kUnknownCaller);
    const uint32_t start = pushdown.frame(point, caller);
    auto place = std::make_unique<PlaceTokens>();
    std::vector<int32_t> accepted;
    TokenWalker walker;
    walker.run(pushdown, *vocabulary_, start, vocabulary_->sorted(),
               [&](int32_t id, TokenVerdict v) {
                   if (v == TokenVerdict::accepted)
                       accepted.push_back(id);
                   else if (v == TokenVerdict::depends_on_caller)
                       place->depends_on_caller.push_back(id);
               });
    place->dense = int64_t(accepted.size()) * kDenseShare > vocabulary_->logit_rows();
    if (place->dense) {
        place->accepted_mask.reset(vocabulary_->logit_rows());
        for (int32_t id : accepted) place->accepted_mask.set(id);
    } else {
        place->accepted_list = std::move(accepted);
    }
    return *places_.emplace(key, std::move(place)).first->second;
}

size_t CompiledConstraint::places_known() const {
    std::lock_guard lock(mutex_);
    return places_.size();
}

}  // namespace pagoda::grammar
