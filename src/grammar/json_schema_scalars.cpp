// The JSON Schema compiler's strings and numbers: lengths, patterns (regex_to_gbnf, as a search
// within the JSON string), formats (json_schema_formats) and exact bounds
// (json_schema_number_range).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "grammar/json_schema_compiler.hpp"
#include "grammar/json_schema_formats.hpp"
#include "grammar/json_schema_number_range.hpp"
#include "grammar/regex_to_gbnf.hpp"

namespace pagoda::grammar::json_schema {

Expr SchemaCompiler::compile_string(const Json &s, const std::string &pointer) {
    const std::string quote = gbnf_literal("\"");
    const bool has_length = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
        if (s.contains("format")) refuse("'pattern' with 'format' at " + where(pointer) +
                                         " is not supported");
        if (has_length)
            refuse("'pattern' with '" +
                   std::string(s.contains("minLength") ? "minLength" : "maxLength") +
                   "' at " + where(pointer) + " is not supported");
        if (!s["pattern"].is_string())
            refuse("'pattern' at " + where(pointer) + " must be a string");
        std::string body;
        size_t size = 0;
        try {
            body = regex_to_gbnf_expression(s["pattern"].get<std::string>(),
                                            RegexScope::search,
                                            RegexText::json_string_content, &size);
        } catch (const Error &e) {
            refuse("'pattern' at " + where(pointer) + ": " + e.what());
        }
        grow(body.size(), size);
        return {quote + " (" + body + ") " + quote, false};
    }
    if (s.contains("format")) {
        if (has_length)
            refuse("'format' with '" +
                   std::string(s.contains("minLength") ? "minLength" : "maxLength") +
                   "' at " + where(pointer) + " is not supported");
        const Json &f = s["format"];
        if (!f.is_string()) refuse("'format' at " + where(pointer) + " must be a string");
        const std::optional<std::string> body = string_format_gbnf(f.get<std::string>());
        if (!body)
            refuse("'format' \"" + f.get<std::string>() + "\" at " + where(pointer) +
                   " is not supported");
        return {quote + " (" + *body + ") " + quote, false};
    }
    if (!has_length) return {value_rule("json-string"), true};
    const uint32_t min = s.contains("minLength") ? count(s, "minLength", pointer) : 0;
    const uint32_t max =
        s.contains("maxLength") ? count(s, "maxLength", pointer) : kUnbounded;
    if (max < min) refuse("'minLength' at " + where(pointer) + " is above 'maxLength'");
    grow(0, 2 * (max != kUnbounded ? max : min + 1));
    return {quote + " " + counted(value_rule("json-char"), min, max) + " " + quote, false};
}

double SchemaCompiler::bound_value(const Json &s, const std::string &keyword,
                                   const std::string &pointer) {
    const Json &v = s[keyword];
    if (!v.is_number()) refuse("'" + keyword + "' at " + where(pointer) + " must be a number");
    const double d = v.get<double>();
    if (!(std::fabs(d) <= double(kMaxNumberBound)))
        refuse("'" + keyword + "' " + v.dump() + " at " + where(pointer) +
               " is past the supported range of ±1e18");
    return d;
}

int64_t SchemaCompiler::exact_integer(const Json &v) {
    if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
    return int64_t(v.get<double>());
}

std::vector<SchemaCompiler::Bound> SchemaCompiler::bounds(const Json &s, const std::string &pointer,
                                                          bool lower) {
    const std::string plain = lower ? "minimum" : "maximum";
    const std::string strict = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::vector<Bound> out;
    bool plain_exclusive = false;
    if (s.contains(strict)) {
        if (s[strict].is_boolean()) {
            plain_exclusive = s[strict].get<bool>();
        } else {
            bound_value(s, strict, pointer);
            out.push_back({&s[strict], true, strict});
        }
    }
    if (s.contains(plain)) {
        bound_value(s, plain, pointer);
        out.push_back({&s[plain], plain_exclusive, plain});
    }
    return out;
}

Expr SchemaCompiler::compile_integer(const Json &s, const std::string &pointer) {
    std::optional<int64_t> min, max;
    for (const Bound &b : bounds(s, pointer, true)) {
        const double d = b.value->get<double>();
        const bool integral = b.value->is_number_integer() || std::floor(d) == d;
        int64_t v = integral ? exact_integer(*b.value) : int64_t(std::ceil(d));
        if (integral && b.exclusive) ++v;
        if (!min || v > *min) min = v;
    }
    for (const Bound &b : bounds(s, pointer, false)) {
        const double d = b.value->get<double>();
        const bool integral = b.value->is_number_integer() || std::floor(d) == d;
        int64_t v = integral ? exact_integer(*b.value) : int64_t(std::floor(d));
        if (integral && b.exclusive) --v;
        if (!max || v < *max) max = v;
    }
    if (!min && !max) return {value_rule("json-integer"), true};
    if (min && max && *min > *max)
        refuse("the bounds at " + where(pointer) + " hold no integer");
    const std::string body = integer_range_gbnf(min, max);
    grow(body.size(), body.size() / 4);
    return {body, false};
}

Expr SchemaCompiler::compile_number(const Json &s, const std::string &pointer) {
    std::optional<NumberBound> lower, upper;
    for (int side = 0; side < 2; ++side) {
        std::optional<NumberBound> &bound = side == 0 ? lower : upper;
        for (const Bound &b : bounds(s, pointer, side == 0)) {
            const double d = b.value->get<double>();
            if (!b.value->is_number_integer() && std::floor(d) != d)
                refuse("'" + b.keyword + "' " + b.value->dump() + " at " + where(pointer) +
                       " is not an integer, which a number's bound must be here");
            const NumberBound nb{exact_integer(*b.value), b.exclusive};
            const bool tighter = !bound || (side == 0 ? nb.value > bound->value
                                                      : nb.value < bound->value) ||
                                 (nb.value == bound->value && nb.exclusive);
            if (tighter) bound = nb;
        }
    }
    if (!lower && !upper) return {value_rule("json-number"), true};
    const std::optional<std::string> body = number_range_gbnf(lower, upper);
    if (!body) refuse("the bounds at " + where(pointer) + " hold no number");
    grow(body->size(), body->size() / 4);
    return {*body, false};
}

}  // namespace pagoda::grammar::json_schema
