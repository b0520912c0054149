// json_schema_to_gbnf: for a set of schemas, instances written in the grammar's layout match and
// invalid ones (wrong type, missing or extra property, out of range, too many items, not in the
// enum, other whitespace) do not; integer and number ranges checked at every integer of a window
// around their ends; every refused keyword named with its JSON pointer.
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/json_schema_to_gbnf.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::grammar::Grammar;
using pagoda::grammar::json_object_gbnf;
using pagoda::grammar::json_schema_rules;
using pagoda::grammar::json_schema_to_gbnf;
using pagoda::grammar::matches_fully;
using pagoda::grammar::parse_gbnf;
using Json = nlohmann::ordered_json;

namespace {

// The layout the grammar admits, as Python's json.dumps writes it: ", " and ": " separators.
// nlohmann's dump() writes "," and ":" (checked below), so containers are written here and only
// scalars come from dump().
std::string dumps(const Json &v) {
    if (v.is_object()) {
        std::string out = "{";
        bool first = true;
        for (const auto &[key, value] : v.items()) {
            out += (first ? "" : ", ") + Json(key).dump() + ": " + dumps(value);
            first = false;
        }
        return out + "}";
    }
    if (v.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + dumps(v[i]);
        return out + "]";
    }
    return v.dump();
}

Grammar compile(const std::string &schema) {
    const std::string gbnf = json_schema_to_gbnf(Json::parse(schema));
    try {
        return parse_gbnf(gbnf);
    } catch (const pagoda::Error &e) {
        std::printf("schema %s gave a grammar the parser refused (%s):\n%s", schema.c_str(),
                    e.what(), gbnf.c_str());
        throw;
    }
}

struct Case {
    const char *schema;
    std::vector<const char *> valid;    // JSON texts (see as_written)
    std::vector<const char *> invalid;
};

const std::vector<Case> kCases = {
    {R"({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"}}, "required": ["name", "age"]})",
     {R"({"name": "Ann", "age": 30})", R"({"name": "", "age": 0, "email": "a.b@x-y.example.org"})",
      R"({"name": "Q\"\\\n\u0001\u00e9", "age": 150})"},
     {R"({"name": "Ann"})", R"({"age": 3})", R"({"name": "Ann", "age": 151})",
      R"({"name": "Ann", "age": -1})", R"({"name": 5, "age": 1})", R"({})",
      R"({"name": "Ann", "age": 30, "x": 1})", R"({"age": 30, "name": "Ann"})",
      R"({"name": "Ann", "age": 30, "email": "no-at-sign"})", R"({"name": "Ann", "age": 1.5})"}},
    {R"({"enum": ["red", "green", 3, null, {"a": [1, true]}]})",
     {R"("red")", R"("green")", "3", "null", R"({"a": [1, true]})"},
     {R"("blue")", "4", R"("Red")", R"({"a": [1]})"}},
    {R"({"const": {"a": [1, "x"], "b": null}})", {R"({"a": [1, "x"], "b": null})"},
     {R"({"a": [1, "x"]})", R"({"b": null, "a": [1, "x"]})"}},
    {R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
     {"[1]", "[1, -2, 3]"}, {"[]", "[1, 2, 3, 4]", R"(["a"])", "[1.5]"}},
    {R"({"type": "array", "maxItems": 2})", {"[]", R"([1, "a"])", R"([{"x": []}])"},
     {"[1, 2, 3]"}},
    {R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}], "title": "t"})",
     {R"("ab")", "null"}, {R"("abc")", "1", "false"}},
    {R"({"oneOf": [{"type": "integer"}, {"type": "boolean"}]})", {"1", "true", "false"},
     {"null", "1.5"}},
    {R"({"type": ["integer", "boolean"]})", {"-7", "true"}, {R"("x")", "null", "-0", "01"}},
    {R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
        "$ref": "#/$defs/node"})",
     {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"},
     {R"({"kids": []})", R"({"v": 1, "kids": [{}]})"}},
    {R"({"definitions": {"n": {"type": "number"}}, "type": "object",
        "properties": {"a": {"$ref": "#/definitions/n"}, "b": {"$ref": "#/properties/a"}}})",
     {R"({"a": 1.5e3, "b": -0.25})", "{}", R"({"b": 2})"}, {R"({"a": "1"})"}},
    {R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["next"]})",
     {R"({"next": null})", R"({"next": {"next": {"next": null}}})"}, {R"({"next": 1})", "{}"}},
    {R"({"type": "object", "additionalProperties": {"type": "number"}})",
     {"{}", R"({"a": 1, "b": 2.5})"}, {R"({"a": "x"})", "[]"}},
    {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": true})",
     {R"({"a": 1})", R"({"a": 1, "z": [1], "y": {}})"}, {R"({"z": 1})", R"({"z": 1, "a": 1})"}},
    {R"({"type": "object"})", {"{}"}, {R"({"a": 1})"}},
    {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})",
     {R"(["a", 1])", R"(["a"])", "[]"}, {R"(["a", 1, 2])", "[1]", R"([1, "a"])"}},
    {R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"},
        "minItems": 2, "maxItems": 3})",
     {R"(["a", true])", R"(["a", true, false])"}, {R"(["a"])", R"(["a", 1])",
      R"(["a", true, true, true])"}},
    {R"({"type": "string", "minLength": 2, "maxLength": 4})",
     {R"("ab")", R"("abcd")", R"("\u00e9\u4e2d\n")", R"("\"\\")"}, {R"("a")", R"("abcde")"}},
    {R"({"type": "string", "pattern": "^[a-z]+\\d$"})", {R"("abc1")", R"("z0")"},
     {R"("Abc1")", R"("abc")", R"("abc12")"}},
    {R"({"type": "string", "pattern": "ab"})", {R"("xxabyy")", R"("ab")", R"("a\nab")"},
     {R"("a b")", R"("")"}},
    {R"({"type": "string", "pattern": "^\"[^\"]*\"$"})", {R"("\"hi\"")", R"("\"\"")"},
     {R"("hi")", R"("\"a\"b\"")"}},
    {R"({"type": "string", "format": "date"})",
     {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("2023-04-30")"},
     {R"("2024-13-01")", R"("2024-1-01")", R"("2024-01-32")", R"("2023-02-29")",
      R"("1900-02-29")", R"("2023-04-31")", R"("2023-02-30")"}},
    {R"({"type": "string", "format": "time"})", {R"("12:30:00Z")", R"("23:59:59.5+01:00")"},
     {R"("24:00:00Z")", R"("12:30:00")", R"("23:59:60Z")"}},
    {R"({"type": "string", "format": "date-time"})", {R"("2024-01-31T12:00:00.123-05:30")"},
     {R"("2024-01-31 12:00:00Z")"}},
    {R"({"type": "string", "format": "uuid"})", {R"("123e4567-E89B-12d3-a456-426614174000")"},
     {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}},
    {R"({"type": "string", "format": "ipv4"})", {R"("255.0.10.1")", R"("0.0.0.0")"},
     {R"("256.1.1.1")", R"("01.1.1.1")", R"("1.1.1")"}},
    {R"({"type": "number", "minimum": 0, "exclusiveMaximum": 10})",
     {"0", "9.99", "5", "0.0"}, {"10", "-0.1", "10.0", "1e1", "-0"}},
    {R"({"type": "number"})", {"0", "-0", "1.5e-3", "2E+10", "-12.75"},
     {"01", "1.", ".5", "+1", "1e", R"("1")"}},
    {R"({})", {"null", "[1, {\"a\": \"b\"}]", "-2.5"}, {}},
    {"true", {"{}", R"("x")"}, {}},
    {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
        "c": {"type": "integer"}}, "required": ["b"]})",
     {R"({"b": 1})", R"({"a": 1, "b": 2})", R"({"b": 1, "c": 2})", R"({"a": 1, "b": 2, "c": 3})"},
     {R"({"a": 1})", R"({"b": 1, "a": 2})", "{}", R"({"a": 1, "c": 3})"}},
    {R"({"type": "object", "properties": {"a": {"type": "null"}, "b": {"type": "null"}}})",
     {"{}", R"({"a": null})", R"({"b": null})", R"({"a": null, "b": null})"},
     {R"({"b": null, "a": null})"}},
    {R"({"allOf": [{"type": "boolean"}], "description": "d"})", {"true"}, {"1"}},
    {R"({"type": ["string", "null"], "maxLength": 1})", {R"("a")", "null"}, {R"("ab")"}},
    {R"({"type": "integer", "exclusiveMinimum": 2.5, "maximum": 4.5})", {"3", "4"},
     {"2", "5", "3.0"}},
    {R"({"type": "boolean", "uniqueItems": false, "$comment": "c", "deprecated": true})",
     {"false"}, {"0"}},
};

// Objects and arrays are written with dumps(); scalars are used as written in the case, so
// that spellings dump() would change ("-0", "1e3", "01") can be tested too.
std::string as_written(const char *text) {
    return text[0] == '{' || text[0] == '[' ? dumps(Json::parse(text)) : std::string(text);
}

void check_case(const Case &c, const Grammar &g) {
    for (const char *text : c.valid) {
        const std::string written = as_written(text);
        if (!matches_fully(g, written)) {
            std::printf("schema %s: valid %s was refused\n", c.schema, written.c_str());
            fail();
        }
    }
    for (const char *text : c.invalid) {
        const std::string written = as_written(text);
        if (matches_fully(g, written)) {
            std::printf("schema %s: invalid %s was accepted\n", c.schema, written.c_str());
            fail();
        }
    }
}

void instances_match_their_schema(void **) {
    // The reason for dumps(): nlohmann writes no spaces.
    const Json sample = Json::parse(R"({"a": [1, 2]})");
    assert_string_equal(sample.dump().c_str(), "{\"a\":[1,2]}");
    assert_string_equal(dumps(sample).c_str(), "{\"a\": [1, 2]}");
    size_t texts = 0;
    for (const Case &c : kCases) {
        check_case(c, compile(c.schema));
        texts += c.valid.size() + c.invalid.size();
    }
    std::printf("%zu schemas, %zu texts\n", kCases.size(), texts);
}

// Layout: no whitespace but the two separators, nothing around the value.
void layout_has_no_free_whitespace(void **) {
    const Grammar g = compile(R"({"type": "object", "properties": {"a": {"type": "array",
        "items": {"type": "integer"}}}, "required": ["a"]})");
    assert_true(matches_fully(g, "{\"a\": [1, 2]}"));
    assert_false(matches_fully(g, "{\"a\":[1,2]}"));
    assert_false(matches_fully(g, "{\"a\": [1,2]}"));
    assert_false(matches_fully(g, " {\"a\": [1, 2]}"));
    assert_false(matches_fully(g, "{\"a\": [1, 2]}\n"));
    assert_false(matches_fully(g, "{ \"a\": [1, 2]}"));
    // A nlohmann::json schema keeps its keys sorted: its properties come out in that order.
    const nlohmann::json sorted = nlohmann::json::parse(R"({"type": "object", "properties":
        {"b": {"type": "integer"}, "a": {"type": "integer"}}, "required": ["a", "b"]})");
    const Grammar by_key = parse_gbnf(json_schema_to_gbnf(sorted));
    assert_true(matches_fully(by_key, "{\"a\": 1, \"b\": 2}"));
    assert_false(matches_fully(by_key, "{\"b\": 2, \"a\": 1}"));
    const Grammar object = parse_gbnf(json_object_gbnf());
    assert_true(matches_fully(object, "{}"));
    assert_true(matches_fully(object, "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\\/\"}"));
    assert_false(matches_fully(object, "[1]"));
    assert_false(matches_fully(object, "\"x\""));
    assert_false(matches_fully(object, "{\"a\":1}"));
}

// Whether `text` is in [lo, hi] for either end absent.
bool in_range(long long v, std::optional<long long> lo, std::optional<long long> hi) {
    return (!lo || v >= *lo) && (!hi || v <= *hi);
}

void integer_ranges_are_exact(void **) {
    struct Range {
        std::optional<long long> lo, hi;
    };
    std::vector<Range> ranges = {
        {0, 0}, {-5, -1}, {-1234, 56}, {99, 1001}, {7, 7}, {-1000050, -999990}, {0, 100},
        {-100, 0}, {10, std::nullopt}, {std::nullopt, -10}, {-3, std::nullopt},
        {std::nullopt, 250}, {999999999999, 1000000000049}};
    std::mt19937 rng(7);
    for (int i = 0; i < 12; ++i) {
        const long long a = std::uniform_int_distribution<long long>(-20000, 20000)(rng);
        const long long width = std::uniform_int_distribution<long long>(0, 3000)(rng);
        ranges.push_back({a, a + width});
    }
    size_t checked = 0;
    for (size_t r = 0; r < ranges.size(); ++r) {
        const Range &range = ranges[r];
        // Alternate the keywords: minimum/maximum, and their exclusive forms.
        Json schema = {{"type", "integer"}};
        if (range.lo) {
            if (r % 2) schema["exclusiveMinimum"] = *range.lo - 1;
            else schema["minimum"] = *range.lo;
        }
        if (range.hi) {
            if (r % 3 == 0) schema["exclusiveMaximum"] = *range.hi + 1;
            else schema["maximum"] = *range.hi;
        }
        const Grammar g = compile(schema.dump());
        const long long from = (range.lo ? *range.lo : *range.hi - 100) - 50;
        const long long to = (range.hi ? *range.hi : *range.lo + 100) + 50;
        for (long long v = from; v <= to; ++v) {
            const bool ours = matches_fully(g, std::to_string(v));
            if (ours != in_range(v, range.lo, range.hi)) {
                std::printf("schema %s: %lld gives %d\n", schema.dump().c_str(), v, ours);
                fail();
            }
            ++checked;
        }
        for (const char *bad : {"-0", "01", "+1", "1.0", "00", ""})
            assert_false(matches_fully(g, bad));
    }
    std::printf("%zu ranges, %zu integers checked\n", ranges.size(), checked);
}

// Numbers with integer bounds: every integer and some decimals of a window, written plainly.
void number_ranges_are_exact(void **) {
    struct Range {
        std::optional<long long> lo, hi;
        bool lo_exclusive, hi_exclusive;
    };
    const std::vector<Range> ranges = {
        {-3, 12, false, true},           {-20, -7, true, false}, {0, 0, false, false},
        {5, std::nullopt, true, false},  {std::nullopt, -2, false, true},
        {-1, 1, true, true},             {97, 103, false, false}};
    const char *const fractions[] = {"", ".0", ".00", ".5", ".05", ".999", ".000001"};
    size_t checked = 0;
    for (const Range &range : ranges) {
        Json schema = {{"type", "number"}};
        if (range.lo) schema[range.lo_exclusive ? "exclusiveMinimum" : "minimum"] = *range.lo;
        if (range.hi) schema[range.hi_exclusive ? "exclusiveMaximum" : "maximum"] = *range.hi;
        const Grammar g = compile(schema.dump());
        const long long from = (range.lo ? *range.lo : *range.hi - 20) - 20;
        const long long to = (range.hi ? *range.hi : *range.lo + 20) + 20;
        for (long long i = from; i <= to; ++i) {
            for (const char *fraction : fractions) {
                for (int sign = 0; sign < 2; ++sign) {
                    if (sign == 1 && i != 0) continue;  // "-0.5": the negative side of 0
                    const std::string text =
                        (sign ? "-" : "") + std::to_string(i) + fraction;
                    const double v = std::stod(text);
                    bool expected = true;
                    if (range.lo) expected &= range.lo_exclusive ? v > *range.lo : v >= *range.lo;
                    if (range.hi) expected &= range.hi_exclusive ? v < *range.hi : v <= *range.hi;
                    if (text == "-0" || text == "-0.0" || text == "-0.00") expected = false;
                    if (matches_fully(g, text) != expected) {
                        std::printf("schema %s: %s gives %d\n", schema.dump().c_str(),
                                    text.c_str(), !expected);
                        fail();
                    }
                    ++checked;
                }
            }
        }
    }
    std::printf("%zu number texts checked\n", checked);
}

void expect_refused(const char *schema, const char *message) {
    try {
        (void)json_schema_to_gbnf(Json::parse(schema));
    } catch (const pagoda::Error &e) {
        if (std::string(e.what()).find(message) == std::string::npos) {
            std::printf("schema %s: message '%s' lacks '%s'\n", schema, e.what(), message);
            fail();
        }
        assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
        return;
    }
    std::printf("schema %s was accepted\n", schema);
    fail();
}

void refused_keywords_name_keyword_and_pointer(void **) {
    expect_refused(R"({"not": {}})", "'not' at the root is not supported");
    expect_refused(R"({"type": "object", "properties": {"a": {"not": {}}}})",
                   "'not' at /properties/a is not supported");
    expect_refused(R"({"properties": {"a/b~": {"if": {}}}})",
                   "'if' at /properties/a~1b~0 is not supported");
    expect_refused(R"({"type": "integer", "multipleOf": 3})", "'multipleOf' at the root");
    expect_refused(R"({"type": "array", "items": {"dependentRequired": {}}})",
                   "'dependentRequired' at /items");
    expect_refused(R"({"type": "object", "patternProperties": {}})", "'patternProperties' at");
    expect_refused(R"({"type": "object", "minProperties": 1})", "'minProperties' at the root");
    expect_refused(R"({"type": "array", "uniqueItems": true})", "'uniqueItems' at the root");
    expect_refused(R"({"type": "array", "contains": {}})", "'contains' at the root");
    expect_refused(R"({"anyOf": [{"unevaluatedProperties": false}]})",
                   "'unevaluatedProperties' at /anyOf/0");
    expect_refused(R"({"properties": {"a": {"type": "string", "format": "hostname"}}})",
                   "'format' \"hostname\" at /properties/a is not supported");
    expect_refused(R"({"allOf": [{}, {}]})", "'allOf' at the root");
    expect_refused(R"({"type": "object", "anyOf": [{}]})", "'anyOf' with 'type' at the root");
    expect_refused(R"({"$ref": "#/$defs/a", "minimum": 1, "$defs": {"a": {}}})",
                   "'$ref' with 'minimum' at the root");
    expect_refused(R"({"$ref": "http://example.com/s"})", "'$ref' at the root must be");
    expect_refused(R"({"$ref": "#/$defs/missing"})",
                   "'$ref' \"#/$defs/missing\" at the root does not resolve");
    expect_refused(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})", "left recursion");
    expect_refused(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]},
        "b": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})",
                   "left recursion");
    expect_refused(R"({"type": "number", "minimum": 0.5})",
                   "'minimum' 0.5 at the root is not an integer");
    expect_refused(R"({"type": "string", "maxLength": 5000})",
                   "'maxLength' 5000 at the root is past the limit of 1000");
    expect_refused(R"({"type": "array", "minItems": -1})", "'minItems' at the root must be");
    expect_refused(R"({"type": "foo"})", "type 'foo' at the root is not supported");
    expect_refused(R"x({"properties": {"p": {"type": "string", "pattern": "a(?=b)"}}})x",
                   "'pattern' at /properties/p: regex: lookahead '(?=' at offset 1");
    expect_refused(R"({"type": "object", "required": ["x"]})",
                   "required property 'x' at the root is not in 'properties'");
    expect_refused(R"({"type": "integer", "minimum": 5, "maximum": 3})", "hold no integer");
    expect_refused(R"({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1})",
                   "hold no number");
    expect_refused(R"({"type": "string", "pattern": "a", "maxLength": 3})",
                   "'pattern' with 'maxLength' at the root");
    expect_refused(R"({"type": "integer", "maximum": 1e30})", "'maximum' 1e+30 at the root");
    expect_refused("false", "the schema false at the root admits no value");
    expect_refused(R"({"type": "array", "prefixItems": [{}], "maxItems": 0, "minItems": 1})",
                   "'minItems' at the root");
    expect_refused("[1]", "the schema at the root is not an object");
}

// Two schemas' rules under prefixes, beside a wrapper of the caller's own (a tool call's
// {"name": ..., "arguments": ...}): the prefixes keep them apart (both use json-string), each
// schema is reached through its start rule, and the names are checked.
void rules_under_a_prefix_share_one_grammar(void **) {
    const std::string a = json_schema_rules(
        Json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]})"),
        "args-a", "a-");
    const std::string b = json_schema_rules(
        Json::parse(R"({"type": "object", "properties": {"n": {"type": "integer"},
                        "tag": {"$ref": "#/$defs/tag"}}, "$defs": {"tag": {"type": "string"}}})"),
        "args-b", "b-");
    assert_true(a.rfind("args-a ::= ", 0) == 0);
    assert_true(a.find("\nroot ::=") == std::string::npos && a.find("\njson-") == std::string::npos);
    assert_true(a.find("a-json-string ::= ") != std::string::npos);
    assert_true(b.find("b-json-integer ::= ") != std::string::npos);
    const std::string wrapper =
        R"(root ::= "{\"name\": " ("\"a\", \"arguments\": " args-a | )"
        R"("\"b\", \"arguments\": " args-b) "}")" "\n";
    const Grammar g = parse_gbnf(wrapper + a + b);
    assert_true(matches_fully(g, R"({"name": "a", "arguments": {"city": "Oslo"}})"));
    assert_true(matches_fully(g, R"({"name": "b", "arguments": {"n": 3, "tag": "x"}})"));
    assert_true(matches_fully(g, R"({"name": "b", "arguments": {}})"));
    assert_false(matches_fully(g, R"({"name": "a", "arguments": {"n": 3}})"));
    assert_false(matches_fully(g, R"({"name": "b", "arguments": {"city": "Oslo"}})"));
    for (const auto &[start, prefix] : std::vector<std::pair<std::string, std::string>>{
             {"", "p-"}, {"a b", "p-"}, {"ok", "p q"}, {"p-start", "p-"}}) {
        try {
            json_schema_rules(Json::object(), start, prefix);
            fail_msg("json_schema_rules accepted start '%s', prefix '%s'", start.c_str(),
                     prefix.c_str());
        } catch (const pagoda::Error &e) {
            assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
        }
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(instances_match_their_schema),
        cmocka_unit_test(layout_has_no_free_whitespace),
        cmocka_unit_test(integer_ranges_are_exact),
        cmocka_unit_test(number_ranges_are_exact),
        cmocka_unit_test(refused_keywords_name_keyword_and_pointer),
        cmocka_unit_test(rules_under_a_prefix_share_one_grammar),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
