// Expressions, following jinja2's grammar and operator precedence: conditional expressions, or,
// and, not, comparisons (chained, in, not in), + -, ~, * / // %, ** (left-associative, as in
// jinja2), unary - +, then postfix access, calls, filters and tests (which bind tighter than any
// arithmetic). Unknown filters and tests fail here, as jinja2 fails at compile time.
#pragma once

#include "tokenizer/jinja_token_stream.hpp"

namespace pagoda::tok::jinja {

class ExpressionParser : protected TokenStream {
public:
    using TokenStream::TokenStream;

protected:
    // An expression, or several separated by commas (an implicit tuple, `{% set a, b = 1, 2 %}`).
    ExprPtr parse_tuple(bool with_condexpr);
    // One expression; without the conditional form when `with_condexpr` is false (a for loop's
    // iterable, where `if` starts the loop's filter).
    ExprPtr parse_expression(bool with_condexpr);

private:
    ExprPtr parse_condexpr();
    ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = {});
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr parse_math1();
    ExprPtr parse_concat();
    ExprPtr parse_math2();
    ExprPtr parse_pow();
    ExprPtr parse_unary(bool with_filter);
    ExprPtr parse_primary();
    static ExprPtr literal(Value v, int line);
    ExprPtr parse_postfix(ExprPtr node);
    ExprPtr parse_subscript(ExprPtr node, int line);
    void parse_call_args(Expr &e);  // "(" arguments ")" into e.args (after those there) and e.kwargs
    ExprPtr parse_call(ExprPtr callee);
    ExprPtr parse_filter_expr(ExprPtr node);
};

}  // namespace pagoda::tok::jinja
