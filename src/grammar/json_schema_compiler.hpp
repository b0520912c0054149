// The JSON Schema compiler's internals, shared by its three sources: json_schema_to_gbnf.cpp
// (the walk over schemas, $ref and the combinators), json_schema_scalars.cpp (strings, numbers)
// and json_schema_containers.cpp (objects, arrays). Not part of any interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.hpp"

namespace pagoda::grammar::json_schema {

using Json = nlohmann::ordered_json;

constexpr int kMaxSchemaDepth = 64;
// The grammar text, and the rules and elements it becomes once parsed (counted repetitions are
// spelled out by the parser): bounded below the parser's limits so that what compiles also parses.
constexpr size_t kMaxGrammarBytes = size_t{4} << 20;
constexpr size_t kMaxGrammarSize = kMaxRules / 2;
// A tuple nests one group per item in the grammar (the parser allows 64 levels).
constexpr size_t kMaxPrefixItems = 32;
// No upper count.
constexpr uint32_t kUnbounded = UINT32_MAX;

// Throws Error(PAGODA_ERR_INVALID_ARGUMENT) "JSON Schema: <message>".
[[noreturn]] void refuse(const std::string &message);
// "'<keyword>' at <where> is not supported".
[[noreturn]] void unsupported(const std::string &keyword, const std::string &pointer);
// A schema's JSON pointer for messages: "the root" for the empty one.
std::string where(const std::string &pointer);
// `key` escaped for a JSON pointer (~ as ~0, / as ~1).
std::string pointer_token(const std::string &key);
// `item` repeated min..max times (max kUnbounded: no end), as GBNF.
std::string counted(const std::string &item, uint32_t min, uint32_t max);

// A GBNF expression and whether it can stand in a sequence as it is.
struct Expr {
    std::string text;
    bool atomic = false;
};

// One schema document to one grammar. Each subschema becomes an expression (or a rule when it
// must stand in a sequence), each $ref target a rule.
class SchemaCompiler {
public:
    // `start` names the rule for the whole schema; every other rule's name starts with
    // `prefix` (json_schema_rules() in json_schema_to_gbnf.hpp).
    explicit SchemaCompiler(const Json &root, std::string start = "root", std::string prefix = "")
        : root_(root), start_(std::move(start)), prefix_(std::move(prefix)) {}

    // The grammar text, rule `start` first.
    std::string run();

private:
    // Rules: a fresh name from a hint, a rule under a name already reserved, or both at once;
    // `atom` leaves an atomic expression as it is and makes a rule of any other.
    std::string reserve(const std::string &hint);
    void define_reserved(const std::string &name, const std::string &body);
    std::string define(const std::string &hint, const std::string &body);
    std::string atom(const Expr &e, const std::string &hint);
    // Counts the grammar's bytes and parsed size; refuses past the limits above.
    void grow(size_t bytes, size_t grammar_size);
    // One of the plain-value rules (json_schema_layout.hpp), defined with what it uses on first
    // use.
    std::string value_rule(const std::string &name);

    // Keyword checks: a count in [0, kMaxRepeat]; every keyword known; `keyword` alone but for
    // annotations (anything beside it would be an intersection of schemas).
    uint32_t count(const Json &s, const std::string &keyword, const std::string &pointer);
    void check_keywords(const Json &s, const std::string &pointer);
    void only_keyword(const Json &s, const std::string &keyword, const std::string &pointer);

    // The walk (json_schema_to_gbnf.cpp). `depth` bounds nesting; `hint` names the rules made.
    std::string compile(const Json &s, const std::string &pointer, int depth,
                        const std::string &hint);
    Expr compile_expression(const Json &s, const std::string &pointer, int depth,
                            const std::string &hint);
    std::string literal_json(const Json &v, const std::string &keyword,
                             const std::string &pointer);
    std::vector<std::string> types_of(const Json &s, const std::string &pointer);
    Expr compile_type(const Json &s, const std::string &pointer, int depth,
                      const std::string &hint, const std::string &type);
    std::string reference(const Json &ref, const std::string &pointer, int depth);
    // Whether a $ref target leads, with nothing written, to one being compiled with nothing
    // written since it began: a cycle the top-down matcher could not leave.
    bool reaches_leftmost(const std::string &target) const;

    // Strings and numbers (json_schema_scalars.cpp).
    Expr compile_string(const Json &s, const std::string &pointer);
    Expr compile_integer(const Json &s, const std::string &pointer);
    Expr compile_number(const Json &s, const std::string &pointer);
    // A lower or upper bound keyword's value and whether it is exclusive. Draft 4's boolean
    // exclusiveMinimum/exclusiveMaximum make minimum/maximum exclusive.
    struct Bound {
        const Json *value = nullptr;
        bool exclusive = false;
        std::string keyword;
    };
    std::vector<Bound> bounds(const Json &s, const std::string &pointer, bool lower);
    // A bound keyword's value: a number within ±kMaxNumberBound.
    double bound_value(const Json &s, const std::string &keyword, const std::string &pointer);
    // An integer-valued bound as int64 (exact for integers written as such).
    static int64_t exact_integer(const Json &v);

    // Objects and arrays (json_schema_containers.cpp).
    Expr compile_object(const Json &s, const std::string &pointer, int depth,
                        const std::string &hint);
    Expr compile_array(const Json &s, const std::string &pointer, int depth,
                       const std::string &hint);

    const Json &root_;
    const std::string start_;
    const std::string prefix_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::set<std::string> names_;
    std::map<std::string, std::string> ref_rules_;  // $ref target pointer → its rule
    // $ref targets being compiled with no text written since: a $ref to one is left recursion.
    std::set<std::string> leftmost_;
    std::map<std::string, std::set<std::string>> left_edges_;  // target → targets it starts with
    size_t bytes_ = 0;
    size_t size_ = 0;
};

}  // namespace pagoda::grammar::json_schema
