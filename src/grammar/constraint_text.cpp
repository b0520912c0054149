#include "grammar/constraint_text.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"
#include "grammar/json_schema_to_gbnf.hpp"
#include "grammar/regex_to_gbnf.hpp"

namespace pagoda::grammar {

const char *constraint_kind_name(ConstraintKind kind) {
    switch (kind) {
    case ConstraintKind::none: return "none";
    case ConstraintKind::grammar: return "grammar";
    case ConstraintKind::regex: return "regex";
    case ConstraintKind::json_schema: return "JSON Schema";
    case ConstraintKind::json_object: return "JSON object";
    }
    return "unknown";
}

Grammar constraint_grammar(ConstraintKind kind, std::string_view text) {
    switch (kind) {
    case ConstraintKind::grammar:
        return parse_gbnf(text);
    case ConstraintKind::regex:
        return parse_gbnf(regex_to_gbnf(text));
    case ConstraintKind::json_schema: {
        nlohmann::ordered_json schema;
        try {
            schema = nlohmann::ordered_json::parse(text);
        } catch (const nlohmann::json::parse_error &e) {
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "JSON Schema: not valid JSON (at byte " + std::to_string(e.byte) + ")");
        }
        return parse_gbnf(json_schema_to_gbnf(schema));
    }
    case ConstraintKind::json_object:
        return parse_gbnf(json_object_gbnf());
    case ConstraintKind::none:
        break;
    }
    throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                "constraint kind " + std::to_string(int32_t(kind)) + " is not a constraint");
}

}  // namespace pagoda::grammar
