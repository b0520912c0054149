#include "grammar/compiled_constraint.hpp"

#include "grammar/token_walk.hpp"

namespace pagoda::grammar {

namespace {

// Past this share of the vocabulary, a place's accepted tokens are kept as a mask: OR-ing the
// mask's words beats setting each bit.
constexpr int32_t kDenseShare = 64;
// Whole-state masks kept at most (16 KB each at 128k tokens); when full the cache starts over,
// which costs a recomputation per state and needs no bookkeeping per hit.
constexpr size_t kMaxStates = 512;

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
    uint32_t rank = 0;  // the token's position in the byte order: the walk goes in that order
    walker.run(pushdown, *vocabulary_, std::span<const uint32_t>(&start, 1), vocabulary_->sorted(),
               [&](int32_t id, TokenVerdict v) {
                   if (v == TokenVerdict::accepted)
                       accepted.push_back(id);
                   else if (v == TokenVerdict::depends_on_caller)
                       place->depends_on_caller.push_back(rank);
                   ++rank;
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

size_t CompiledConstraint::StateHash::operator()(const std::vector<uint32_t> &v) const {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the words
    for (uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
    return size_t(h);
}

std::shared_ptr<const TokenMask> CompiledConstraint::state_mask(const std::vector<uint32_t> &state) const {
    std::lock_guard lock(mutex_);
    auto it = states_.find(state);
    return it == states_.end() ? nullptr : it->second;
}

void CompiledConstraint::remember_state_mask(const std::vector<uint32_t> &state,
                                             std::shared_ptr<const TokenMask> mask) const {
    std::lock_guard lock(mutex_);
    if (states_.size() >= kMaxStates) states_.clear();
    states_.emplace(state, std::move(mask));
}

size_t CompiledConstraint::states_known() const {
    std::lock_guard lock(mutex_);
    return states_.size();
}

size_t CompiledConstraint::places_known() const {
    std::lock_guard lock(mutex_);
    return places_.size();
}

}  // namespace pagoda::grammar
