// Rewriting a regex tree (regex_syntax.hpp) so that no repetition repeats an item that matches
// the empty text, and estimating the grammar the tree becomes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grammar/regex_syntax.hpp"

namespace pagoda::grammar::regex {

// The same language with no repetition of a nullable item: (x){n,m} with x nullable becomes
// (x less ""){0,m}. Spelling out a nullable sequence copies its tail once per item: `budget`
// bounds the nodes copied, and is charged for them; past it this throws
// Error(PAGODA_ERR_INVALID_ARGUMENT).
Node without_nullable_repeats(const Node &n, size_t &budget);

// What the GBNF parser will make of `n`, in rules plus elements: each counted repetition
// becomes that many references to one item and a helper rule per optional copy.
uint64_t grammar_cost(const Node &n);

}  // namespace pagoda::grammar::regex
