// The keyword tables of the JSON Schema compiler.
#include "grammar/json_schema_keywords.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace pagoda::grammar::json_schema {
namespace {

template <size_t N>
bool contains(const std::array<std::string_view, N> &table, std::string_view word) {
    return std::find(table.begin(), table.end(), word) != table.end();
}

constexpr std::array<std::string_view, 12> kAnnotations = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};

constexpr std::array<std::string_view, 23> kKeywords = {
    "type", "properties", "required", "additionalProperties", "items", "prefixItems",
    "minItems", "maxItems", "uniqueItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum"};

constexpr std::array<std::pair<std::string_view, const char *>, 15> kTypeOfKeyword = {{
    {"properties", "object"}, {"required", "object"}, {"additionalProperties", "object"},
    {"items", "array"}, {"prefixItems", "array"}, {"minItems", "array"}, {"maxItems", "array"},
    {"minLength", "string"}, {"maxLength", "string"}, {"pattern", "string"},
    {"format", "string"}, {"minimum", "number"}, {"maximum", "number"},
    {"exclusiveMinimum", "number"}, {"exclusiveMaximum", "number"}}};

constexpr std::array<std::string_view, 7> kTypes = {"null", "boolean", "object", "array",
                                                    "string", "number", "integer"};

}  // namespace

bool is_annotation(std::string_view keyword) { return contains(kAnnotations, keyword); }

bool is_supported_keyword(std::string_view keyword) { return contains(kKeywords, keyword); }

const char *type_implied_by(std::string_view keyword) {
    for (const auto &[word, type] : kTypeOfKeyword)
        if (word == keyword) return type;
    return nullptr;
}

bool is_type_name(std::string_view name) { return contains(kTypes, name); }

}  // namespace pagoda::grammar::json_schema
