#include "server/structured_output.hpp"

#include <set>
#include <string>

#include "common/error.hpp"
#include "grammar/constraint_text.hpp"
#include "grammar/grammar.hpp"
#include "server/api_error.hpp"
#include "server/body_fields.hpp"

namespace pagoda::server {

using nlohmann::json;
using grammar::ConstraintKind;

namespace {

// Where in the body the schema sits, to find it again in the ordered parse.
const char *const kSchemaPaths[] = {"/response_format/json_schema/schema", "/guided_json",
                                    "/structured_outputs/json"};

void set(GenerationRequest &r, ConstraintKind kind, std::string text, const std::string &field) {
    if (r.constraint_kind != 0)
        invalid_field(field, field + " and " + r.constraint_field +
                                 " both constrain the output: send one");
    r.constraint_kind = int32_t(kind);
    r.constraint_text = std::move(text);
    r.constraint_field = field;
}

// A JSON Schema given as an object, a boolean, or (vLLM) its JSON text.
std::string schema_text(const json &schema, const std::string &field) {
    if (schema.is_object() || schema.is_boolean()) return schema.dump();
    if (schema.is_string()) {
        const json parsed = json::parse(schema.get<std::string>(), nullptr, false);
        if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean()))
            invalid_field(field, field + " must be a JSON Schema (an object), or its JSON text");
        return schema.get<std::string>();
    }
    invalid_field(field, field + " must be a JSON Schema (an object)");
}

std::string string_field(const json &v, const std::string &field) {
    if (!v.is_string() || v.get<std::string>().empty())
        invalid_field(field, field + " must be a non-empty string");
    return v.get<std::string>();
}

// vLLM's guided_choice: the output is one of the strings, exactly.
std::string choice_grammar(const json &choices, const std::string &field) {
    if (!choices.is_array() || choices.empty() || choices.size() > 1024)
        invalid_field(field, field + " must be an array of 1 to 1024 strings");
    std::string text = "root ::=";
    for (size_t i = 0; i < choices.size(); ++i) {
        const std::string one = string_field(choices[i], field + "[" + std::to_string(i) + "]");
        text += (i ? " | " : " ") + grammar::gbnf_literal(one);
    }
    return text;
}

void parse_response_format(const json &rf, GenerationRequest &r) {
    if (!rf.is_object()) invalid_field("response_format", "response_format must be an object");
    const json *type = field(rf, "type");
    if (type == nullptr || !type->is_string())
        invalid_field("response_format", "response_format.type must be \"text\", \"json_object\" "
                                         "or \"json_schema\"");
    const std::string t = type->get<std::string>();
    for (auto it = rf.begin(); it != rf.end(); ++it)
        if (it.key() != "type" && !(t == "json_schema" && it.key() == "json_schema"))
            invalid_field("response_format", "response_format." + it.key() +
                                                 " is not a field of a " + t + " response_format");
    if (t == "text") return;
    if (t == "json_object") return set(r, ConstraintKind::json_object, "", "response_format");
    if (t != "json_schema")
        throw ApiError(400, "response_format.type '" + t + "' is not supported (text, json_object, "
                            "json_schema are)", "response_format", "unsupported_value");
    const json *js = field(rf, "json_schema");
    if (js == nullptr || !js->is_object())
        invalid_field("response_format", "response_format.json_schema must be an object with a name "
                                         "and a schema");
    static const std::set<std::string> known = {"name", "description", "schema", "strict"};
    for (auto it = js->begin(); it != js->end(); ++it)
        if (!known.count(it.key()))
            invalid_field("response_format", "response_format.json_schema." + it.key() +
                                                 " is not a field of json_schema");
    const json *name = field(*js, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty() ||
        name->get<std::string>().size() > 64)
        invalid_field("response_format", "response_format.json_schema.name must be a string of 1 "
                                         "to 64 characters");
    if (const json *strict = field(*js, "strict"))
        if (!strict->is_boolean())
            invalid_field("response_format", "response_format.json_schema.strict must be a boolean");
    // Without a schema any JSON value will do (OpenAI makes it optional).
    const json *schema = field(*js, "schema");
    set(r, ConstraintKind::json_schema,
        schema == nullptr ? "{}" : schema_text(*schema, "response_format.json_schema.schema"),
        "response_format");
}

void parse_structured_outputs(const json &so, GenerationRequest &r) {
    const std::string f = "structured_outputs";
    if (!so.is_object()) invalid_field(f, f + " must be an object");
    for (auto it = so.begin(); it != so.end(); ++it) {
        const std::string &k = it.key();
        const std::string where = f + "." + k;
        if (it->is_null()) continue;
        if (k == "json") set(r, ConstraintKind::json_schema, schema_text(*it, where), f);
        else if (k == "regex") set(r, ConstraintKind::regex, string_field(*it, where), f);
        else if (k == "grammar") set(r, ConstraintKind::grammar, string_field(*it, where), f);
        else if (k == "choice") set(r, ConstraintKind::grammar, choice_grammar(*it, where), f);
        else if (k == "json_object") {
            if (!it->is_boolean()) invalid_field(f, where + " must be a boolean");
            if (it->get<bool>()) set(r, ConstraintKind::json_object, "", f);
        } else {
            throw ApiError(400, where + " is not supported", f, "unsupported_value");
        }
    }
}

}  // namespace

void parse_structured_output(const json &body, GenerationRequest &r) {
    if (const json *rf = field(body, "response_format")) parse_response_format(*rf, r);
    if (const json *g = field(body, "guided_json"))
        set(r, ConstraintKind::json_schema, schema_text(*g, "guided_json"), "guided_json");
    if (const json *g = field(body, "guided_regex"))
        set(r, ConstraintKind::regex, string_field(*g, "guided_regex"), "guided_regex");
    if (const json *g = field(body, "guided_grammar"))
        set(r, ConstraintKind::grammar, string_field(*g, "guided_grammar"), "guided_grammar");
    if (const json *g = field(body, "guided_choice"))
        set(r, ConstraintKind::grammar, choice_grammar(*g, "guided_choice"), "guided_choice");
    if (const json *so = field(body, "structured_outputs")) parse_structured_outputs(*so, r);
    // One engine does structured output here: naming another is refused, not ignored.
    if (const json *b = field(body, "guided_decoding_backend"))
        if (!b->is_string() || (b->get<std::string>() != "auto" && b->get<std::string>() != "pagoda"))
            throw ApiError(400, "guided_decoding_backend: this server has one structured output "
                                "engine (\"auto\")", "guided_decoding_backend", "unsupported_value");
    if (r.constraint_kind == 0) return;
    if (r.options.beam_width > 0)
        invalid_field(r.constraint_field, r.constraint_field + " cannot be combined with beam search");
    try {
        grammar::constraint_grammar(ConstraintKind(r.constraint_kind), r.constraint_text);
    } catch (const Error &e) {
        invalid_field(r.constraint_field, r.constraint_field + ": " + e.what());
    }
}

void keep_schema_order(std::string_view raw_body, GenerationRequest &r) {
    if (r.constraint_kind != int32_t(ConstraintKind::json_schema)) return;
    const nlohmann::ordered_json body = nlohmann::ordered_json::parse(raw_body, nullptr, false);
    if (body.is_discarded()) return;  // parse_json_object accepted it: cannot happen
    for (const char *path : kSchemaPaths) {
        const nlohmann::ordered_json::json_pointer pointer(path);
        if (!body.contains(pointer)) continue;
        const nlohmann::ordered_json &schema = body.at(pointer);
        if (schema.is_object()) r.constraint_text = schema.dump();
        return;
    }
}

}  // namespace pagoda::server
