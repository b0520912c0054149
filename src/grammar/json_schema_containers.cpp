// The JSON Schema compiler's objects and arrays: members in the schema's order with optional ones
// omittable, additional members after them; tuples (prefixItems) and counted items.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grammar/json_schema_compiler.hpp"

namespace pagoda::grammar::json_schema {

Expr SchemaCompiler::compile_object(const Json &s, const std::string &pointer, int depth,
                                    const std::string &hint) {
    static const Json kNoProperties = Json::object();
    const Json &properties = s.contains("properties") ? s["properties"] : kNoProperties;
    if (!properties.is_object())
        refuse("'properties' at " + where(pointer) + " must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
        const Json &r = s["required"];
        if (!r.is_array()) refuse("'required' at " + where(pointer) + " must be an array");
        for (const Json &name : r) {
            if (!name.is_string())
                refuse("'required' at " + where(pointer) + " must hold strings");
            if (!properties.contains(name.get<std::string>()))
                refuse("required property '" + name.get<std::string>() + "' at " +
                       where(pointer) + " is not in 'properties'");
            required.insert(name.get<std::string>());
        }
    }
    // Other members: absent means none (strict mode).
    std::optional<std::string> extra_value;
    if (s.contains("additionalProperties")) {
        const Json &a = s["additionalProperties"];
        if (!a.is_boolean() && !a.is_object())
            refuse("'additionalProperties' at " + where(pointer) +
                   " must be a boolean or a schema");
        if (a != Json(false))
            extra_value = compile(a, pointer + "/additionalProperties", depth + 1,
                                  hint + "-additional");
    }
    const std::string open = gbnf_literal("{"), close = gbnf_literal("}");
    const std::string comma = gbnf_literal(", ");
    std::string extra_member;
    if (extra_value)
        extra_member = value_rule("json-string") + " " + gbnf_literal(": ") + " " + *extra_value;
    if (properties.empty()) {
        if (!extra_value) return {gbnf_literal("{}"), true};
        return {open + " (" + extra_member + " (" + comma + " " + extra_member + ")*)? " + close,
                false};
    }
    std::vector<std::string> members;
    std::vector<bool> needed;
    for (const auto &[key, value] : properties.items()) {
        const std::string value_expr =
            compile(value, pointer + "/properties/" + pointer_token(key), depth + 1,
                    hint + "-" + key);
        members.push_back(literal_json(Json(key), "properties", pointer) + " " +
                          gbnf_literal(": ") + " " + value_expr);
        needed.push_back(required.count(key) != 0);
    }
    const size_t n = members.size();
    // tails[i]: members i.. after at least one written (each with its ", ").
    std::vector<std::string> tails(n + 1);
    tails[n] = extra_value ? "(" + comma + " " + extra_member + ")*" : "";
    const bool leading_optional = !needed[0];
    for (size_t i = n; i-- > 1;) {
        const std::string item = needed[i] ? comma + " " + members[i]
                                            : "(" + comma + " " + members[i] + ")?";
        tails[i] = item + (tails[i + 1].empty() ? "" : " " + tails[i + 1]);
        // With optional members first, each tail is shared by several alternatives below:
        // a rule keeps the grammar linear in the number of properties.
        if (leading_optional) tails[i] = define(hint + "-tail", tails[i]);
    }
    // The first member written is the first present one; only optional ones may be skipped.
    std::vector<std::string> firsts;
    bool all_optional = true;
    for (size_t i = 0; i < n; ++i) {
        firsts.push_back(members[i] + (tails[i + 1].empty() ? "" : " " + tails[i + 1]));
        if (needed[i]) {
            all_optional = false;
            break;
        }
    }
    if (all_optional)
        firsts.push_back(extra_value ? extra_member + " " + tails[n] : "\"\"");
    std::string body = open + " (";
    for (size_t i = 0; i < firsts.size(); ++i) body += (i ? " | " : "") + firsts[i];
    return {body + ") " + close, false};
}

Expr SchemaCompiler::compile_array(const Json &s, const std::string &pointer, int depth,
                                   const std::string &hint) {
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
        const Json &p = s["prefixItems"];
        if (!p.is_array()) refuse("'prefixItems' at " + where(pointer) + " must be an array");
        if (p.size() > kMaxPrefixItems)
            refuse("'prefixItems' at " + where(pointer) + " has more than " +
                   std::to_string(kMaxPrefixItems) + " schemas");
        for (size_t i = 0; i < p.size(); ++i)
            prefix.push_back(compile(p[i], pointer + "/prefixItems/" + std::to_string(i),
                                     depth + 1, hint + "-" + std::to_string(i)));
    }
    // Items past the prefix: `items` absent is any value, or none after a prefix.
    std::optional<std::string> item;
    if (!s.contains("items")) {
        if (prefix.empty()) item = value_rule("json-value");
    } else if (s["items"] != Json(false)) {
        if (!s["items"].is_boolean() && !s["items"].is_object())
            refuse("'items' at " + where(pointer) + " must be a boolean or a schema");
        item = compile(s["items"], pointer + "/items", depth + 1, hint + "-item");
    }
    const uint32_t min = s.contains("minItems") ? count(s, "minItems", pointer) : 0;
    const uint32_t max = s.contains("maxItems") ? count(s, "maxItems", pointer) : kUnbounded;
    const size_t k = prefix.size();
    const size_t most = item ? max : std::min<size_t>(max, k);
    if (min > most)
        refuse("'minItems' at " + where(pointer) + " asks for more items than the schema " +
               "allows");
    grow(0, 2 * (max != kUnbounded ? max : min + 1));
    const std::string comma = gbnf_literal(", ");
    const std::string open = gbnf_literal("["), close = gbnf_literal("]");
    if (k == 0) {
        if (!item || max == 0) return {gbnf_literal("[]"), true};
        const uint32_t more_max = max != kUnbounded ? max - 1 : kUnbounded;
        const std::string more = counted(comma + " " + *item, min == 0 ? 0 : min - 1, more_max);
        const std::string items = *item + " " + more;
        return {open + " " + (min == 0 ? "(" + items + ")?" : items) + " " + close, false};
    }
    const size_t written_prefix = std::min(k, most);
    std::string rest;
    if (item && max > k) {
        const uint32_t extra_min = min > k ? uint32_t(min - k) : 0;
        const uint32_t extra_max = max != kUnbounded ? uint32_t(max - k) : kUnbounded;
        rest = counted(comma + " " + *item, extra_min, extra_max);
    }
    // From the last prefix item back: the items from i on may be left out when an array
    // of i items is long enough.
    for (size_t i = written_prefix; i-- > 0;) {
        std::string piece = (i ? comma + " " : "") + prefix[i] + (rest.empty() ? "" : " " + rest);
        rest = i >= min ? "(" + piece + ")?" : piece;
    }
    return {open + " " + rest + " " + close, false};
}

}  // namespace pagoda::grammar::json_schema
