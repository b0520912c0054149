#include "engine/constraint_cache.hpp"

#include "common/error.hpp"
#include "engine/constraint_vocabulary.hpp"

namespace pagoda::engine {

namespace {

// Compiled constraints kept: each holds its places' masks (16 KB per place at 128k tokens).
constexpr size_t kMaxConstraints = 64;

}  // namespace

ConstraintCache::ConstraintCache(std::shared_ptr<const tok::Tokenizer> tokenizer,
                                 std::vector<int32_t> end_ids, int32_t logit_rows)
    : tokenizer_(std::move(tokenizer)), end_ids_(std::move(end_ids)), logit_rows_(logit_rows) {}

std::shared_ptr<const grammar::CompiledConstraint> ConstraintCache::get(grammar::ConstraintKind kind,
                                                                       const std::string &text) {
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
    {
        std::lock_guard lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->kind == kind && it->text == text) {
                entries_.splice(entries_.begin(), entries_, it);
                return it->compiled;
            }
        if (!tokenizer_)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "a constraint needs the model's tokenizer to spell tokens, and this model "
                        "carries none");
        if (!vocabulary_) vocabulary_ = constraint_vocabulary(*tokenizer_, end_ids_, logit_rows_);
        vocabulary = vocabulary_;
    }
    // Compiled outside the lock: other requests go on meanwhile (two may compile the same text
    // at once; both results are right, one is kept).
    auto compiled = std::make_shared<const grammar::CompiledConstraint>(
        grammar::constraint_grammar(kind, text), std::move(vocabulary));
    std::lock_guard lock(mutex_);
    entries_.push_front({kind, text, compiled});
    if (entries_.size() > kMaxConstraints) entries_.pop_back();
    return compiled;
}

size_t ConstraintCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace pagoda::engine
