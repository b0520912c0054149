// A request's constraint as the host writes it: a kind and a text (a GBNF grammar, a regular
// expression, a JSON Schema) turned into the byte-level grammar.
#pragma once

#include <cstdint>
#include <string_view>

#include "grammar/grammar.hpp"

namespace pagoda::grammar {

// The values of pagoda_constraint_kind_t (include/pagoda/request.h).
enum class ConstraintKind : int32_t { none = 0, grammar = 1, regex = 2, json_schema = 3, json_object = 4 };

// "grammar", "regex", "JSON Schema", "JSON object": for messages.
const char *constraint_kind_name(ConstraintKind kind);

// Throws Error(PAGODA_ERR_INVALID_ARGUMENT) naming the construct at fault and where it is (the
// compilers' messages), or the kind when it is none or unknown. `text` is ignored for
// json_object.
Grammar constraint_grammar(ConstraintKind kind, std::string_view text);

}  // namespace pagoda::grammar
