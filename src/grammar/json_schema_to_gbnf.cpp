// JSON Schema → GBNF: the entry points, and the walk over schemas: keywords checked, $ref
// targets made rules (with left recursion refused), anyOf/oneOf/allOf, enum and const, and the
// dispatch on type to json_schema_scalars.cpp and json_schema_containers.cpp.
#include "grammar/json_schema_to_gbnf.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/json_schema_compiler.hpp"
#include "grammar/json_schema_keywords.hpp"
#include "grammar/json_schema_layout.hpp"

namespace pagoda::grammar {
namespace json_schema {

[[noreturn]] void refuse(const std::string &message) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT, "JSON Schema: " + message);
}

[[noreturn]] void unsupported(const std::string &keyword, const std::string &pointer) {
    refuse("'" + keyword + "' at " + where(pointer) + " is not supported");
}

std::string pointer_token(const std::string &key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string where(const std::string &pointer) {
    return pointer.empty() ? "the root" : pointer;
}

// `item` repeated min..max times (max kUnbounded: no end).
std::string counted(const std::string &item, uint32_t min, uint32_t max) {
    const std::string g = "(" + item + ")";
    if (max == 0) return "\"\"";
    if (max == min) return min == 1 ? g : g + "{" + std::to_string(min) + "}";
    if (max == kUnbounded) {
        if (min == 0) return g + "*";
        if (min == 1) return g + "+";
        return g + "{" + std::to_string(min) + ",}";
    }
    if (min == 0 && max == 1) return g + "?";
    return g + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

std::string SchemaCompiler::run() {
    names_.insert(start_);
    ref_rules_[""] = start_;
    leftmost_.insert("");
    define_reserved(start_, compile_expression(root_, "", 0, start_).text);
    std::string out;
    for (const auto &[name, body] : rules_)
        if (name == start_) out += name + " ::= " + body + "\n";
    for (const auto &[name, body] : rules_)
        if (name != start_) out += name + " ::= " + body + "\n";
    return out;
}

std::string SchemaCompiler::reserve(const std::string &hint) {
    std::string base;
    for (char c : hint.substr(0, 48)) {
        const bool ok = std::isalnum(uint8_t(c)) != 0 && uint8_t(c) < 0x80;
        if (ok)
            base += c;
        else if (!base.empty() && base.back() != '-')
            base += '-';
    }
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.empty() || base.rfind("json-", 0) == 0) base = "s-" + base;
    base = prefix_ + base;
    std::string name = base;
    for (int n = 2; names_.count(name); ++n) name = base + "-" + std::to_string(n);
    names_.insert(name);
    return name;
}

void SchemaCompiler::define_reserved(const std::string &name, const std::string &body) {
    grow(name.size() + body.size() + 6, 1);
    rules_.emplace_back(name, body);
}

std::string SchemaCompiler::define(const std::string &hint, const std::string &body) {
    const std::string name = reserve(hint);
    define_reserved(name, body);
    return name;
}

std::string SchemaCompiler::atom(const Expr &e, const std::string &hint) {
    return e.atomic ? e.text : define(hint, e.text);
}

void SchemaCompiler::grow(size_t bytes, size_t grammar_size) {
    bytes_ += bytes;
    size_ += grammar_size;
    if (bytes_ > kMaxGrammarBytes || size_ > kMaxGrammarSize)
        refuse("the grammar grows past " + std::to_string(kMaxGrammarBytes) + " bytes or " +
               std::to_string(kMaxGrammarSize) + " rules and elements");
}

std::string SchemaCompiler::value_rule(const std::string &plain_name) {
    const std::string name = prefix_ + plain_name;
    if (names_.count(name)) return name;
    names_.insert(name);
    for (const PlainValueRule &rule : plain_value_rules()) {
        if (rule.name != plain_name) continue;
        // The bodies name only rules of the same table, each starting "json-".
        std::string body(rule.body);
        for (size_t at = body.find("json-"); !prefix_.empty() && at != std::string::npos;
             at = body.find("json-", at + prefix_.size() + 5))
            body.insert(at, prefix_);
        define_reserved(name, body);
        for (std::string_view used : rule.uses) value_rule(std::string(used));
    }
    return name;
}

uint32_t SchemaCompiler::count(const Json &s, const std::string &keyword,
                               const std::string &pointer) {
    const Json &v = s[keyword];
    const bool integral = v.is_number_integer() ||
                          (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (!integral || v.get<double>() < 0)
        refuse("'" + keyword + "' at " + where(pointer) + " must be a non-negative integer");
    if (v.get<double>() > kMaxRepeat)
        refuse("'" + keyword + "' " + v.dump() + " at " + where(pointer) +
               " is past the limit of " + std::to_string(kMaxRepeat));
    return uint32_t(v.get<double>());
}

void SchemaCompiler::check_keywords(const Json &s, const std::string &pointer) {
    for (const auto &[key, value] : s.items()) {
        if (is_annotation(key)) continue;
        if (!is_supported_keyword(key)) unsupported(key, pointer);
        if (key == "uniqueItems" && value != Json(false)) unsupported(key, pointer);
    }
}

void SchemaCompiler::only_keyword(const Json &s, const std::string &keyword,
                                  const std::string &pointer) {
    for (const auto &[key, value] : s.items())
        if (key != keyword && !is_annotation(key))
            refuse("'" + keyword + "' with '" + key + "' at " + where(pointer) +
                   " is not supported");
}

std::string SchemaCompiler::compile(const Json &s, const std::string &pointer, int depth,
                                    const std::string &hint) {
    return atom(compile_expression(s, pointer, depth, hint), hint);
}

Expr SchemaCompiler::compile_expression(const Json &s, const std::string &pointer, int depth,
                                        const std::string &hint) {
    if (depth > kMaxSchemaDepth)
        refuse("the schema at " + where(pointer) + " nests deeper than " +
               std::to_string(kMaxSchemaDepth) + " levels");
    if (s.is_boolean()) {
        if (s.get<bool>()) return {value_rule("json-value"), true};
        refuse("the schema false at " + where(pointer) + " admits no value");
    }
    if (!s.is_object()) refuse("the schema at " + where(pointer) + " is not an object");
    check_keywords(s, pointer);
    if (s.contains("$ref")) {
        only_keyword(s, "$ref", pointer);
        return {reference(s["$ref"], pointer, depth), true};
    }
    if (s.contains("allOf")) {
        only_keyword(s, "allOf", pointer);
        const Json &all = s["allOf"];
        if (!all.is_array() || all.size() != 1)
            refuse("'allOf' at " + where(pointer) +
                   " is only supported with exactly one schema");
        return compile_expression(all[0], pointer + "/allOf/0", depth + 1, hint);
    }
    for (const char *keyword : {"anyOf", "oneOf"}) {
        if (!s.contains(keyword)) continue;
        only_keyword(s, keyword, pointer);
        const Json &options = s[keyword];
        if (!options.is_array() || options.empty())
            refuse("'" + std::string(keyword) + "' at " + where(pointer) +
                   " must be a non-empty array");
        std::string body;
        for (size_t i = 0; i < options.size(); ++i) {
            const std::string item_pointer =
                pointer + "/" + keyword + "/" + std::to_string(i);
            const Expr e = compile_expression(options[i], item_pointer, depth + 1,
                                              hint + "-" + std::to_string(i));
            body += (i ? " | " : "") + e.text;
        }
        return {body, false};
    }
    if (s.contains("const")) return {literal_json(s["const"], "const", pointer), true};
    if (s.contains("enum")) {
        const Json &values = s["enum"];
        if (!values.is_array() || values.empty())
            refuse("'enum' at " + where(pointer) + " must be a non-empty array");
        std::string body;
        for (size_t i = 0; i < values.size(); ++i)
            body += (i ? " | " : "") + literal_json(values[i], "enum", pointer);
        return {body, values.size() == 1};
    }
    const std::vector<std::string> types = types_of(s, pointer);
    if (types.empty()) return {value_rule("json-value"), true};
    if (types.size() == 1) return compile_type(s, pointer, depth, hint, types[0]);
    std::string body;
    for (size_t i = 0; i < types.size(); ++i) {
        const std::string type_hint = hint + "-" + types[i];
        body += (i ? " | " : "") +
                atom(compile_type(s, pointer, depth, type_hint, types[i]), type_hint);
    }
    return {body, false};
}

std::string SchemaCompiler::literal_json(const Json &v, const std::string &keyword,
                                         const std::string &pointer) {
    std::string text;
    try {
        text = layout_json(v, kMaxSchemaDepth);
    } catch (const nlohmann::json::exception &) {
        refuse("'" + keyword + "' at " + where(pointer) + " holds a string that is not UTF-8");
    }
    grow(text.size(), text.size());
    return gbnf_literal(text);
}

std::vector<std::string> SchemaCompiler::types_of(const Json &s, const std::string &pointer) {
    std::vector<std::string> types;
    if (s.contains("type")) {
        const Json &t = s["type"];
        std::vector<Json> names;
        if (t.is_array())
            names.assign(t.begin(), t.end());
        else
            names.push_back(t);
        for (const Json &name : names) {
            if (!name.is_string())
                refuse("'type' at " + where(pointer) + " must be a string or strings");
            const std::string n = name.get<std::string>();
            if (!is_type_name(n))
                refuse("type '" + n + "' at " + where(pointer) + " is not supported");
            if (std::find(types.begin(), types.end(), n) == types.end()) types.push_back(n);
        }
        if (types.empty()) refuse("'type' at " + where(pointer) + " is an empty array");
        return types;
    }
    for (const auto &[key, value] : s.items())
        if (const char *type = type_implied_by(key))
            if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
    return types;
}

Expr SchemaCompiler::compile_type(const Json &s, const std::string &pointer, int depth,
                                  const std::string &hint, const std::string &type) {
    if (type == "null") return {"\"null\"", true};
    if (type == "boolean") return {"\"true\" | \"false\"", false};
    if (type == "string") return compile_string(s, pointer);
    if (type == "integer") return compile_integer(s, pointer);
    if (type == "number") return compile_number(s, pointer);
    // Inside an object or array text has been written: a $ref from there is no left
    // recursion.
    std::set<std::string> outer;
    std::swap(outer, leftmost_);
    Expr e = type == "object" ? compile_object(s, pointer, depth, hint)
                              : compile_array(s, pointer, depth, hint);
    std::swap(outer, leftmost_);
    return e;
}

std::string SchemaCompiler::reference(const Json &ref, const std::string &pointer, int depth) {
    if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0)
        refuse("'$ref' at " + where(pointer) + " must be \"#\" or start with \"#/\"");
    const std::string target = ref.get<std::string>().substr(1);
    const std::string shown = "'$ref' \"" + ref.get<std::string>() + "\" at " + where(pointer);
    // Every target being compiled with nothing written yet starts with this one.
    for (const std::string &from : leftmost_) left_edges_[from].insert(target);
    if (leftmost_.count(target) || reaches_leftmost(target))
        refuse(shown + " refers back to itself before any text (left recursion)");
    if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return it->second;
    const Json *resolved = nullptr;
    try {
        resolved = &root_.at(Json::json_pointer(target));
    } catch (const nlohmann::json::exception &) {
        refuse(shown + " does not resolve in this document");
    }
    const size_t slash = target.rfind('/');
    const std::string name = reserve("def-" + target.substr(slash + 1));
    ref_rules_[target] = name;
    leftmost_.insert(target);
    const Expr e = compile_expression(*resolved, target, depth + 1, name);
    leftmost_.erase(target);
    define_reserved(name, e.text);
    return name;
}

bool SchemaCompiler::reaches_leftmost(const std::string &target) const {
    std::set<std::string> seen;
    std::vector<std::string> stack = {target};
    while (!stack.empty()) {
        const std::string at = stack.back();
        stack.pop_back();
        if (!seen.insert(at).second) continue;
        if (at != target && leftmost_.count(at)) return true;
        if (auto it = left_edges_.find(at); it != left_edges_.end())
            for (const std::string &next : it->second) stack.push_back(next);
    }
    return false;
}

}  // namespace json_schema

std::string json_schema_to_gbnf(const nlohmann::ordered_json &schema) {
    return json_schema::SchemaCompiler(schema).run();
}

std::string json_schema_to_gbnf(const nlohmann::json &schema) {
    // The copy into an ordered_json recurses once per level: refuse a hostile depth first
    // (counted without recursion).
    std::vector<std::pair<const nlohmann::json *, int>> stack = {{&schema, 0}};
    while (!stack.empty()) {
        const auto [v, depth] = stack.back();
        stack.pop_back();
        if (depth > json_schema::kMaxSchemaDepth * 4)
            json_schema::refuse("the schema nests too deeply");
        if (v->is_structured())
            for (const nlohmann::json &child : *v) stack.emplace_back(&child, depth + 1);
    }
    return json_schema_to_gbnf(nlohmann::ordered_json(schema));
}

std::string json_schema_rules(const nlohmann::ordered_json &schema, const std::string &start,
                              const std::string &prefix) {
    auto is_name = [](const std::string &n) {
        return std::all_of(n.begin(), n.end(), [](char c) {
            return (std::isalnum(uint8_t(c)) != 0 && uint8_t(c) < 0x80) || c == '-' || c == '_';
        });
    };
    if (start.empty() || !is_name(start) || !is_name(prefix))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "json_schema_rules: rule names are letters, digits, '-' and '_' (got '" +
                        start + "' and prefix '" + prefix + "')");
    if (!prefix.empty() && start.rfind(prefix, 0) == 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "json_schema_rules: the start rule '" + start +
                                                     "' must not begin with the prefix '" +
                                                     prefix + "'");
    return json_schema::SchemaCompiler(schema, start, prefix).run();
}

std::string json_object_gbnf() {
    return json_schema_to_gbnf(
        nlohmann::ordered_json{{"type", "object"}, {"additionalProperties", true}});
}

}  // namespace pagoda::grammar
