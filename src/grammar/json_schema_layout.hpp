// The layout of the JSON that structured output admits (see json_schema_to_gbnf.hpp): the GBNF
// rules for plain JSON values in it, and values written in it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagoda::grammar::json_schema {

// A rule for plain JSON values: its name (all start with "json-"), its body, and the rules of
// this table its body refers to.
struct PlainValueRule {
    std::string_view name;
    std::string_view body;
    std::vector<std::string_view> uses;
};

// json-value, json-object, json-member, json-array, json-string, json-char, json-number and
// json-integer (no "-0": the integers as JSON writers write them).
const std::vector<PlainValueRule> &plain_value_rules();

// `value` in the layout: ", " and ": " separators, strings escaped as nlohmann's dump() does
// (as Python's json.dumps with ensure_ascii=False). Throws Error past `max_depth` levels of
// nesting, and nlohmann::json::type_error for a string that is not UTF-8.
std::string layout_json(const nlohmann::ordered_json &value, int max_depth);

}  // namespace pagoda::grammar::json_schema
