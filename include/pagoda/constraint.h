/**
 * \file constraint.h
 * \brief Constrained decoding: the kinds of constraint a request may carry (a grammar, a regular
 *        expression, a JSON Schema, any JSON object) and the grammar text format.
 */
#ifndef PAGODA_CONSTRAINT_H
#define PAGODA_CONSTRAINT_H

#include "pagoda/common.h"

/**
 * \defgroup constraint Constrained decoding
 * \brief Output that must match a grammar, a regular expression or a JSON Schema.
 *
 * A request's constraint (::pagoda_request_options_t `constraint_kind` and `constraint`) is
 * compiled when the request is submitted, once per distinct text (the engine keeps the compiled
 * form for later requests), and applied at every step as a mask on the logits: a token is
 * allowed when its bytes keep the text so far a prefix of some sentence of the language. End of
 * sequence tokens are allowed exactly when the text is a whole sentence; when nothing may follow
 * (the value or match is complete) the sequence ends with ::PAGODA_FINISH_STOP_TOKEN. Each of a
 * request's `n` sequences follows the constraint on its own. A text that does not compile fails
 * the submit with ::PAGODA_ERR_INVALID_ARGUMENT and a message naming the construct and where it
 * is (line:column in a grammar, the offset in a regular expression, the JSON pointer in a
 * schema). Beam search with a constraint is refused.
 *
 * \par Grammar text (GBNF, as llama.cpp defines it)
 * \code
 * root   ::= object                      # the rule named root is the start
 * object ::= "{" ( pair ( ", " pair )* )? "}"
 * pair   ::= string ": " value
 * string ::= "\"" [^"\\]* "\""
 * value  ::= object | string | [0-9]+
 * \endcode
 * A rule is `name ::= alternatives` (names of letters, digits, `_` and `-`; a rule may span
 * lines). Alternatives are separated by `|`; each is a sequence, possibly empty, of: a literal
 * `"..."`, a character class `[...]` (ranges `a-z`, `^` first to negate), `.` (any character),
 * a rule name, or a group `( ... )`; each may be followed by `*`, `+`, `?`, `{n}`, `{n,}` or
 * `{n,m}` (counts up to 1000). Literals and classes take the escapes `\\n \\r \\t \\\\ \\"
 * \\xHH \\uHHHH \\UHHHHHHHH` (code points, matched as UTF-8), classes also `\\] \\[ \\- \\^`.
 * `#` starts a comment to the end of the line. Characters are Unicode code points; the text is
 * matched as UTF-8 bytes. A rule that can reach itself before reading a character (left
 * recursion) is refused: write it with repetition or right recursion.
 *
 * \par Regular expressions
 * The common subset of ECMAScript and Python: literals, `.`, classes, `\\d \\w \\s` and their
 * negations, groups (capturing, `(?:`, named), `|`, greedy and lazy quantifiers, `^` and `$`
 * at the ends. The whole output must match. Backreferences, lookaround, word boundaries, inline
 * flags and `\\p{...}` are refused by name.
 *
 * \par JSON Schema
 * The subset OpenAI's strict structured outputs accept and more: `type` (one or several),
 * `properties` (in the schema's order; those not `required` may be left out),
 * `additionalProperties` (absent means false, as in strict mode), `items`, `prefixItems`,
 * `minItems`, `maxItems`, `enum`, `const`, `anyOf` (`oneOf` read as `anyOf`), `allOf` of one
 * schema, `$ref` into `$defs`/`definitions` (recursion allowed), `minLength`, `maxLength`,
 * `pattern`, `format` (`date`, `time`, `date-time`, `uuid`, `email`, `ipv4`), and exact
 * `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` for integers (integer-valued bounds
 * for numbers). Other keywords are refused by name; annotations (`title`, `description`,
 * `default`, `examples`, ...) are ignored. The JSON is written without free whitespace: `", "`
 * between items and members, `": "` after keys, nothing around the value.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief What a request's `constraint` text is. */
typedef enum pagoda_constraint_kind {
    PAGODA_CONSTRAINT_NONE = 0,        /**< No constraint (the default). */
    PAGODA_CONSTRAINT_GRAMMAR = 1,     /**< A grammar in the GBNF text format above. */
    PAGODA_CONSTRAINT_REGEX = 2,       /**< A regular expression the whole output must match. */
    PAGODA_CONSTRAINT_JSON_SCHEMA = 3, /**< A JSON Schema (its JSON text) the output must satisfy. */
    PAGODA_CONSTRAINT_JSON_OBJECT = 4  /**< Any JSON object; the text is not read. */
} pagoda_constraint_kind_t;

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_CONSTRAINT_H */
