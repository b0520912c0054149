// JSON Schema (structured output: OpenAI's response_format json_schema, vLLM's guided_json)
// compiled to GBNF text.
//
// The JSON the grammar admits has no free whitespace: ", " between items and members, ": "
// after keys (Python's json.dumps layout), nothing before or after the value, so the text ends
// when the value does and a model cannot wander off into spaces. Strings hold any code point but
// `"`, `\` and controls, or the escapes \" \\ \/ \b \f \n \r \t \uHHHH; numbers are JSON numbers.
//
// What each keyword does:
//   type             a type or an array of them; absent: inferred from the other keywords, and
//                    any JSON value when there are none (as for {} and true)
//   properties       emitted in the schema's order (use nlohmann::ordered_json to keep it); each
//                    property not in `required` may be left out
//   additionalProperties  false or ABSENT: no other members (absent is read as false, as in
//                    OpenAI's strict mode and XGrammar's); true or a schema: any number of other
//                    members after the declared ones, with any value or that schema's (their keys
//                    are any strings, a declared name included)
//   items, prefixItems, minItems, maxItems   arrays; `items` absent: any values, except after
//                    `prefixItems`, where it is read as false (a tuple, as for objects)
//   enum, const      the values written in the layout above; they take precedence over `type`
//   anyOf, oneOf     the union (oneOf is read as anyOf: alternatives are not made exclusive)
//   allOf            with one element only
//   $ref             "#", "#/$defs/...", "#/definitions/..." or any other pointer into the
//                    document; recursion becomes rule recursion (left recursion is refused)
//   minLength, maxLength  code points (an escape counts as one; a surrogate pair as two)
//   pattern          ECMAScript regex (regex_to_gbnf.hpp), a search unless anchored with ^...$;
//                    each matched character spelled as json.dumps writes it
//   format           date, time, date-time, uuid, email, ipv4 (json_schema_formats.hpp)
//   minimum, maximum, exclusiveMinimum, exclusiveMaximum   exact: for integers any bounds; for
//                    numbers integer-valued bounds (then numbers are written without exponent)
//   annotations      title, description, default, examples, $schema, $id, $comment, deprecated,
//                    readOnly, writeOnly: ignored; $defs and definitions: where $ref looks
// Anything else throws Error(PAGODA_ERR_INVALID_ARGUMENT) naming the keyword and the JSON pointer
// of the schema that holds it ("JSON Schema: 'not' at /properties/a is not supported"), as do
// counts past kMaxRepeat, nesting past 64 levels and grammars that grow too large.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagoda::grammar {

// A grammar (rule `root`) for the JSON texts that `schema` accepts, laid out as above.
std::string json_schema_to_gbnf(const nlohmann::ordered_json &schema);

// The same for a schema held in a nlohmann::json, whose objects keep their keys sorted: the
// properties come out in that order.
std::string json_schema_to_gbnf(const nlohmann::json &schema);

// The rules of json_schema_to_gbnf(schema) with the schema's rule named `start` instead of root
// and every other rule's name beginning with `prefix`, so that several schemas can sit in one
// grammar under a caller's own rules (a tool call's wrapper around its arguments): give each
// schema its own prefix, and name no rule of your own with one. Names are letters, digits, '-'
// and '_'; `start` must not begin with `prefix`. Throws as json_schema_to_gbnf does, and
// Error(PAGODA_ERR_INVALID_ARGUMENT) for names outside that.
std::string json_schema_rules(const nlohmann::ordered_json &schema, const std::string &start,
                              const std::string &prefix);

// A grammar for any JSON object, in the same layout: response_format {"type": "json_object"}.
std::string json_object_gbnf();

}  // namespace pagoda::grammar
