// The engine's compiled constraints: each (kind, text) compiled once against the model's
// vocabulary and shared by every request that asks for it, the least recently used dropped past
// a bound. Submit compiles (so a bad schema fails the submit, naming the construct); the step
// only reads.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_text.hpp"
#include "grammar/token_vocabulary.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::engine {

class ConstraintCache {
public:
    ConstraintCache(std::shared_ptr<const tok::Tokenizer> tokenizer, std::vector<int32_t> end_ids,
                    int32_t logit_rows);

    // Thread-safe. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for a constraint that does not
    // compile, and when the model carries no tokenizer to spell tokens with.
    std::shared_ptr<const grammar::CompiledConstraint> get(grammar::ConstraintKind kind,
                                                           const std::string &text);
    size_t size() const;

private:
    struct Entry {
        grammar::ConstraintKind kind;
        std::string text;
        std::shared_ptr<const grammar::CompiledConstraint> compiled;
    };
    std::shared_ptr<const tok::Tokenizer> tokenizer_;
    std::vector<int32_t> end_ids_;
    int32_t logit_rows_;
    mutable std::mutex mutex_;
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;  // built on first use
    std::list<Entry> entries_;                                     // most recently used first
};

}  // namespace pagoda::engine
