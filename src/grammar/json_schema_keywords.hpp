// Which JSON Schema keywords structured output reads, which it ignores, and what they imply.
#pragma once

#include <string_view>

namespace pagoda::grammar::json_schema {

// title, description, default, examples, $schema, $id, $comment, deprecated, readOnly,
// writeOnly, and $defs/definitions (read only through $ref).
bool is_annotation(std::string_view keyword);

// The keywords the compiler reads (json_schema_to_gbnf.hpp lists them).
bool is_supported_keyword(std::string_view keyword);

// The type a keyword implies where `type` is absent ("properties": "object", "minLength":
// "string", ...), or nullptr for one that implies none.
const char *type_implied_by(std::string_view keyword);

// null, boolean, object, array, string, number, integer.
bool is_type_name(std::string_view name);

}  // namespace pagoda::grammar::json_schema
