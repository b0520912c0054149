// Tokens to statements, following jinja2's grammar and operator precedence (filters bind
// tighter than arithmetic; `**` is left-associative as in jinja2). Unknown tags, filters and
// tests fail here, as jinja2 fails at compile time, naming the construct and its line.
#pragma once

#include <string_view>

#include "tokenizer/jinja_ast.hpp"

namespace pagoda::tok::jinja {

// Lexes and parses a template. Throws ChatTemplateError (Syntax or Unsupported).
Body parse_template(std::string_view source);

}  // namespace pagoda::tok::jinja
