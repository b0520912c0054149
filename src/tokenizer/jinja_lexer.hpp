// Jinja source to tokens, with the whitespace rules transformers' environment sets:
// trim_blocks (the newline after a block or comment tag is dropped), lstrip_blocks (spaces and
// tabs before a block or comment tag at the start of a line are dropped), `-` and `+` on tag
// delimiters, newlines normalized to "\n" and one trailing newline dropped (keep_trailing_newline
// is off). Comments vanish here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::tok::jinja {

enum class TokenType {
    Text,        // literal template text
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,        // identifiers and keywords (if, for, and, true, ...)
    String,      // a string literal, escapes decoded
    Integer,
    Float,
    Operator,    // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    End,         // end of the source
};

struct Token {
    TokenType type;
    std::string text;  // Text: the text; String: the decoded value; Name/Operator/numbers: as written
    int line;
};

// Throws ChatTemplateError (Syntax) for an unterminated tag, comment or string, or a character
// that is no token.
std::vector<Token> lex(std::string_view source);

}  // namespace pagoda::tok::jinja
