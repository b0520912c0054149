// Plain JSON values in the structured-output layout: no whitespace but the separators.
#include "grammar/json_schema_layout.hpp"

#include "common/error.hpp"

namespace pagoda::grammar::json_schema {
namespace {

void write(const nlohmann::ordered_json &v, std::string &out, int depth, int max_depth) {
    if (depth > max_depth)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "JSON Schema: a 'const' or 'enum' value nests past " +
                        std::to_string(max_depth) + " levels");
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (const auto &[key, value] : v.items()) {
            if (!first) out += ", ";
            first = false;
            out += nlohmann::ordered_json(key).dump();
            out += ": ";
            write(value, out, depth + 1, max_depth);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            write(v[i], out, depth + 1, max_depth);
        }
        out += ']';
    } else {
        out += v.dump();
    }
}

}  // namespace

const std::vector<PlainValueRule> &plain_value_rules() {
    static const std::vector<PlainValueRule> rules = {
        {"json-value",
         "json-object | json-array | json-string | json-number | \"true\" | \"false\" | \"null\"",
         {"json-object", "json-array", "json-string", "json-number"}},
        {"json-object", "\"{\" (json-member (\", \" json-member)*)? \"}\"", {"json-member"}},
        {"json-member", "json-string \": \" json-value", {"json-string", "json-value"}},
        {"json-array", "\"[\" (json-value (\", \" json-value)*)? \"]\"", {"json-value"}},
        {"json-string", "\"\\\"\" json-char* \"\\\"\"", {"json-char"}},
        {"json-char",
         "[^\\x22\\x5C\\x00-\\x1F] | \"\\\\\" ([\\x22\\x5C/bfnrt] | \"u\" [0-9a-fA-F]{4})",
         {}},
        {"json-number",
         "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+\\-]? [0-9]+)?",
         {}},
        {"json-integer", "\"0\" | \"-\"? [1-9] [0-9]*", {}},
    };
    return rules;
}

std::string layout_json(const nlohmann::ordered_json &value, int max_depth) {
    std::string out;
    write(value, out, 0, max_depth);
    return out;
}

}  // namespace pagoda::grammar::json_schema
