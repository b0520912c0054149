#include "tokenizer/jinja_expr_parser.hpp"

#include <cstdlib>

#include "tokenizer/jinja_builtins.hpp"
#include "tokenizer/py_text.hpp"

namespace pagoda::tok::jinja {

ExprPtr ExpressionParser::parse_tuple(bool with_condexpr) {
    const int line = peek().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    ExprPtr tuple = make(ExprKind::Tuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
        if (peek().type == TokenType::BlockEnd || peek().type == TokenType::VarEnd || is_op(")")) break;
        tuple->args.push_back(parse_expression(with_condexpr));
    }
    return tuple;
}

ExprPtr ExpressionParser::parse_expression(bool with_condexpr) {
    DepthGuard guard(depth_, peek().line);
    return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr ExpressionParser::parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
        const int line = next().line;
        ExprPtr cond = parse_or();
        ExprPtr otherwise;
        if (skip_name("else")) otherwise = parse_condexpr();
        ExprPtr c = make(ExprKind::Conditional, line);
        c->args.push_back(std::move(expr));
        c->args.push_back(std::move(cond));
        c->args.push_back(std::move(otherwise));
        expr = std::move(c);
    }
    return expr;
}

ExprPtr ExpressionParser::binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op) {
    ExprPtr e = make(kind, line);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
}

ExprPtr ExpressionParser::parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
        const int line = next().line;
        left = binary(ExprKind::Or, std::move(left), parse_and(), line);
    }
    return left;
}

ExprPtr ExpressionParser::parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
        const int line = next().line;
        left = binary(ExprKind::And, std::move(left), parse_not(), line);
    }
    return left;
}

ExprPtr ExpressionParser::parse_not() {
    if (is_name("not")) {
        DepthGuard guard(depth_, peek().line);
        ExprPtr e = make(ExprKind::Not, next().line);
        e->args.push_back(parse_not());
        return e;
    }
    return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
        std::string op;
        if (peek().type == TokenType::Operator &&
            (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
             peek().text == "<=" || peek().text == ">=")) {
            op = next().text;
        } else if (is_name("in")) {
            next();
            op = "in";
        } else if (is_name("not") && is_name("in", 1)) {
            next();
            next();
            op = "not in";
        } else {
            break;
        }
        if (!cmp) {
            cmp = make(ExprKind::Compare, line);
            cmp->args.push_back(std::move(first));
        }
        cmp->ops.push_back(op);
        cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr ExpressionParser::parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
        const Token &t = next();
        left = binary(ExprKind::Binary, std::move(left), parse_concat(), t.line, t.text);
    }
    return left;
}

ExprPtr ExpressionParser::parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
        const Token &t = next();
        left = binary(ExprKind::Binary, std::move(left), parse_math2(), t.line, "~");
    }
    return left;
}

ExprPtr ExpressionParser::parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        const Token &t = next();
        left = binary(ExprKind::Binary, std::move(left), parse_pow(), t.line, t.text);
    }
    return left;
}

ExprPtr ExpressionParser::parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
        const Token &t = next();
        left = binary(ExprKind::Binary, std::move(left), parse_unary(true), t.line, "**");
    }
    return left;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
    DepthGuard guard(depth_, peek().line);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
        const Token &t = next();
        node = make(t.text == "-" ? ExprKind::Negate : ExprKind::Plus, t.line);
        node->args.push_back(parse_unary(false));
    } else {
        node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
}

ExprPtr ExpressionParser::parse_primary() {
    const Token &t = peek();
    const int line = t.line;
    if (t.type == TokenType::Name) {
        next();
        if (t.text == "true" || t.text == "True") return literal(Value(true), line);
        if (t.text == "false" || t.text == "False") return literal(Value(false), line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), line);
        ExprPtr e = make(ExprKind::Name, line);
        e->name = t.text;
        return e;
    }
    if (t.type == TokenType::String) {
        std::string s;
        while (peek().type == TokenType::String) s += next().text;  // adjacent literals join
        return literal(Value(std::move(s)), line);
    }
    if (t.type == TokenType::Integer) {
        next();
        const auto v = py::parse_int(t.text, 0);
        if (!v) unsupported("integer literal " + t.text + " (past 64 bits)", line);
        return literal(Value(*v), line);
    }
    if (t.type == TokenType::Float) {
        next();
        std::string digits;
        for (char c : t.text)
            if (c != '_') digits += c;
        return literal(Value(std::strtod(digits.c_str(), nullptr)), line);
    }
    if (skip_op("(")) {
        if (skip_op(")")) {
            ExprPtr e = make(ExprKind::Tuple, line);
            return e;
        }
        ExprPtr inner = parse_tuple(true);
        expect_op(")");
        return inner;
    }
    if (skip_op("[")) {
        ExprPtr e = make(ExprKind::List, line);
        while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
        }
        next();
        return e;
    }
    if (skip_op("{")) {
        ExprPtr e = make(ExprKind::DictLit, line);
        while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
        }
        next();
        return e;
    }
    syntax_error("unexpected '" + describe(t) + "'", line);
}

ExprPtr ExpressionParser::literal(Value v, int line) {
    ExprPtr e = make(ExprKind::Literal, line);
    e->value = std::move(v);
    return e;
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
    while (true) {
        const int line = peek().line;
        if (skip_op(".")) {
            if (peek().type == TokenType::Integer) {
                ExprPtr e = make(ExprKind::GetItem, line);
                e->args.push_back(std::move(node));
                e->args.push_back(parse_primary());
                node = std::move(e);
            } else {
                ExprPtr e = make(ExprKind::GetAttr, line);
                e->name = expect_name();
                e->args.push_back(std::move(node));
                node = std::move(e);
            }
        } else if (skip_op("[")) {
            node = parse_subscript(std::move(node), line);
        } else if (is_op("(")) {
            node = parse_call(std::move(node));
        } else {
            return node;
        }
    }
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr node, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (!is_op("]")) {
        if (skip_op(":")) {
            slice = true;
            if (++part > 2) syntax_error("a slice has at most three parts", line);
            continue;
        }
        if (parts[part]) syntax_error("expected ']' or ':' in a subscript", peek().line);
        parts[part] = parse_expression(true);
        if (is_op(",")) unsupported("tuple subscripts", peek().line);
    }
    next();
    ExprPtr e = make(slice ? ExprKind::Slice : ExprKind::GetItem, line);
    e->args.push_back(std::move(node));
    if (!slice && !parts[0]) syntax_error("empty subscript", line);
    e->args.push_back(std::move(parts[0]));
    if (slice) {
        e->args.push_back(std::move(parts[1]));
        e->args.push_back(std::move(parts[2]));
    }
    return e;
}

void ExpressionParser::parse_call_args(Expr &e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
        if (!first) expect_op(",");
        first = false;
        if (is_op(")")) break;
        if (is_op("*") || is_op("**")) unsupported("*args and **kwargs in calls", peek().line);
        if (peek().type == TokenType::Name && is_op("=", 1)) {
            std::string key = next().text;
            next();
            e.kwargs.emplace_back(std::move(key), parse_expression(true));
        } else {
            if (!e.kwargs.empty()) syntax_error("a positional argument follows a keyword argument", peek().line);
            e.args.push_back(parse_expression(true));
        }
    }
    next();
}

ExprPtr ExpressionParser::parse_call(ExprPtr callee) {
    ExprPtr e = make(ExprKind::Call, peek().line);
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
}

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
    while (true) {
        if (is_op("|")) {
            const int line = next().line;
            ExprPtr e = make(ExprKind::Filter, line);
            e->name = expect_name();
            while (skip_op(".")) e->name += "." + expect_name();
            if (!is_known_filter(e->name)) unsupported("filter '" + e->name + "'", line);
            e->args.push_back(std::move(node));
            if (is_op("(")) parse_call_args(*e);
            node = std::move(e);
        } else if (is_name("is")) {
            const int line = next().line;
            ExprPtr e = make(ExprKind::Test, line);
            e->negated = skip_name("not");
            e->name = expect_name();
            while (skip_op(".")) e->name += "." + expect_name();
            if (!is_known_test(e->name)) unsupported("test '" + e->name + "'", line);
            e->args.push_back(std::move(node));
            const Token &t = peek();
            const bool value_start = t.type == TokenType::Name || t.type == TokenType::String ||
                                     t.type == TokenType::Integer || t.type == TokenType::Float ||
                                     (t.type == TokenType::Operator && (t.text == "(" || t.text == "[" || t.text == "{"));
            if (t.type == TokenType::Operator && t.text == "(") {
                parse_call_args(*e);
            } else if (value_start && !is_name("else") && !is_name("or") && !is_name("and")) {
                if (is_name("is")) syntax_error("tests cannot be chained with 'is'", t.line);
                e->args.push_back(parse_postfix(parse_primary()));
            }
            node = std::move(e);
        } else if (is_op("(")) {
            node = parse_call(std::move(node));
        } else {
            return node;
        }
    }
}

}  // namespace pagoda::tok::jinja
