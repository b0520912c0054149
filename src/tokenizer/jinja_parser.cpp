#include "tokenizer/jinja_parser.hpp"

#include <cstdlib>
#include <initializer_list>

#include "tokenizer/jinja_builtins.hpp"
#include "tokenizer/jinja_lexer.hpp"
#include "tokenizer/py_text.hpp"

namespace pagoda::tok::jinja {

namespace {

// Deeper nesting than real templates use is refused, so that hostile input cannot exhaust the
// stack (jinja2 itself stops at Python's recursion limit).
constexpr int kMaxDepth = 200;

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Body parse_all() {
        Body body = parse_body({});
        if (peek().type != TokenType::End) syntax_error("unexpected '" + describe(peek()) + "'", peek().line);
        return body;
    }

private:
    // ---- token helpers
    const Token &peek(size_t ahead = 0) const {
        const size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
        return tokens_[i];
    }
    const Token &next() {
        const Token &t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }
    bool is_op(const char *op, size_t ahead = 0) const {
        return peek(ahead).type == TokenType::Operator && peek(ahead).text == op;
    }
    bool is_name(const char *name, size_t ahead = 0) const {
        return peek(ahead).type == TokenType::Name && peek(ahead).text == name;
    }
    bool skip_op(const char *op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char *name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    static std::string describe(const Token &t) {
        switch (t.type) {
        case TokenType::Text: return "text";
        case TokenType::VarBegin: return "{{";
        case TokenType::VarEnd: return "}}";
        case TokenType::BlockBegin: return "{%";
        case TokenType::BlockEnd: return "%}";
        case TokenType::End: return "end of template";
        case TokenType::String: return "string literal";
        default: return t.text;
        }
    }
    void expect_op(const char *op) {
        if (!skip_op(op)) syntax_error(std::string("expected '") + op + "', found '" + describe(peek()) + "'", peek().line);
    }
    std::string expect_name() {
        if (peek().type != TokenType::Name) syntax_error("expected a name, found '" + describe(peek()) + "'", peek().line);
        return next().text;
    }
    void expect_block_end() {
        if (peek().type != TokenType::BlockEnd)
            syntax_error("expected '%}', found '" + describe(peek()) + "'", peek().line);
        next();
    }

    struct DepthGuard {
        int &depth;
        DepthGuard(int &d, int line) : depth(d) {
            if (++depth > kMaxDepth) unsupported("nesting deeper than " + std::to_string(kMaxDepth) + " levels", line);
        }
        ~DepthGuard() { --depth; }
    };

    static ExprPtr make(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // ---- statements

    // Statements up to a block tag named in `ends` (left unconsumed, after its "{%").
    Body parse_body(std::initializer_list<const char *> ends) {
        DepthGuard guard(depth_, peek().line);
        Body body;
        while (true) {
            const Token &t = peek();
            if (t.type == TokenType::End) {
                if (ends.size() != 0)
                    syntax_error(std::string("unexpected end of template: missing '{% ") + *ends.begin() + " %}'", t.line);
                return body;
            }
            if (t.type == TokenType::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Text;
                s->line = t.line;
                s->text = next().text;
                body.push_back(std::move(s));
            } else if (t.type == TokenType::VarBegin) {
                next();
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Output;
                s->line = t.line;
                s->expr = parse_tuple(true);
                if (peek().type != TokenType::VarEnd)
                    syntax_error("expected '}}', found '" + describe(peek()) + "'", peek().line);
                next();
                body.push_back(std::move(s));
            } else if (t.type == TokenType::BlockBegin) {
                for (const char *end : ends)
                    if (is_name(end, 1)) {
                        next();  // "{%": the caller reads the tag
                        return body;
                    }
                next();
                body.push_back(parse_statement());
            } else {
                syntax_error("unexpected '" + describe(t) + "'", t.line);
            }
        }
    }

    StmtPtr parse_statement() {
        const Token &tag = peek();
        if (tag.type != TokenType::Name) syntax_error("expected a tag name after '{%'", tag.line);
        const std::string name = tag.text;
        const int line = tag.line;
        next();
        auto s = std::make_unique<Stmt>();
        s->line = line;
        if (name == "if") return parse_if(std::move(s));
        if (name == "for") return parse_for(std::move(s));
        if (name == "set") return parse_set(std::move(s));
        if (name == "macro") return parse_macro(std::move(s));
        if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) syntax_error("'" + name + "' outside a loop", line);
            s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
            expect_block_end();
            return s;
        }
        if (name == "generation") {
            s->kind = StmtKind::Block;
            expect_block_end();
            s->body = parse_body({"endgeneration"});
            next();
            expect_block_end();
            return s;
        }
        static const char *const kEnds[] = {"endif", "endfor", "endmacro", "endset", "elif", "else", "endgeneration"};
        for (const char *end : kEnds)
            if (name == end) syntax_error("unexpected '{% " + name + " %}'", line);
        unsupported("tag '" + name + "'", line);
    }

    StmtPtr parse_if(StmtPtr s) {
        s->kind = StmtKind::If;
        while (true) {
            ExprPtr cond = parse_tuple(true);
            expect_block_end();
            Body body = parse_body({"elif", "else", "endif"});
            s->branches.emplace_back(std::move(cond), std::move(body));
            const std::string tag = next().text;
            if (tag == "elif") continue;
            if (tag == "else") {
                expect_block_end();
                s->else_body = parse_body({"endif"});
                next();
            }
            expect_block_end();
            return s;
        }
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> targets;
        const bool parenthesized = skip_op("(");
        do {
            targets.push_back(expect_name());
        } while (skip_op(","));
        if (parenthesized) expect_op(")");
        return targets;
    }

    StmtPtr parse_for(StmtPtr s) {
        s->kind = StmtKind::For;
        s->targets = parse_targets();
        if (!skip_name("in")) syntax_error("expected 'in' in the for tag", peek().line);
        s->expr = parse_tuple(false);
        if (skip_name("if")) s->filter = parse_expression(true);
        if (is_name("recursive")) unsupported("recursive for loops", peek().line);
        expect_block_end();
        ++loop_depth_;
        s->body = parse_body({"else", "endfor"});
        --loop_depth_;
        if (next().text == "else") {
            expect_block_end();
            s->else_body = parse_body({"endfor"});
            next();
        }
        expect_block_end();
        return s;
    }

    StmtPtr parse_set(StmtPtr s) {
        s->kind = StmtKind::Set;
        s->targets.push_back(expect_name());
        if (skip_op(".")) {
            s->attribute = expect_name();
        } else {
            while (skip_op(",")) s->targets.push_back(expect_name());
        }
        if (skip_op("=")) {
            s->expr = parse_tuple(true);
            expect_block_end();
            return s;
        }
        if (is_op("|")) unsupported("filters on a block set", peek().line);
        if (s->targets.size() != 1 || !s->attribute.empty())
            syntax_error("a block set assigns one name", s->line);
        expect_block_end();
        const int saved_loops = loop_depth_;
        s->body = parse_body({"endset"});
        loop_depth_ = saved_loops;
        next();
        expect_block_end();
        return s;
    }

    StmtPtr parse_macro(StmtPtr s) {
        s->kind = StmtKind::Macro;
        s->macro = std::make_unique<MacroDef>();
        s->macro->name = expect_name();
        expect_op("(");
        while (!is_op(")")) {
            if (!s->macro->params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string param = expect_name();
            ExprPtr def;
            if (skip_op("=")) def = parse_expression(true);
            s->macro->params.emplace_back(std::move(param), std::move(def));
        }
        next();
        expect_block_end();
        const int saved_loops = loop_depth_;
        loop_depth_ = 0;  // break/continue cannot cross a macro
        s->macro->body = parse_body({"endmacro"});
        loop_depth_ = saved_loops;
        next();
        if (peek().type == TokenType::Name && peek().text == s->macro->name) next();
        expect_block_end();
        return s;
    }

    // ---- expressions

    // An expression, or several separated by commas (an implicit tuple, `{% set a, b = 1, 2 %}`).
    ExprPtr parse_tuple(bool with_condexpr) {
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

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(depth_, peek().line);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
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

    ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = {}) {
        ExprPtr e = make(kind, line);
        e->name = std::move(op);
        e->args.push_back(std::move(left));
        e->args.push_back(std::move(right));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const int line = next().line;
            left = binary(ExprKind::Or, std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const int line = next().line;
            left = binary(ExprKind::And, std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(depth_, peek().line);
            ExprPtr e = make(ExprKind::Not, next().line);
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
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

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token &t = next();
            left = binary(ExprKind::Binary, std::move(left), parse_concat(), t.line, t.text);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const Token &t = next();
            left = binary(ExprKind::Binary, std::move(left), parse_math2(), t.line, "~");
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token &t = next();
            left = binary(ExprKind::Binary, std::move(left), parse_pow(), t.line, t.text);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const Token &t = next();
            left = binary(ExprKind::Binary, std::move(left), parse_unary(true), t.line, "**");
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
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

    ExprPtr parse_primary() {
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

    static ExprPtr literal(Value v, int line) {
        ExprPtr e = make(ExprKind::Literal, line);
        e->value = std::move(v);
        return e;
    }

    ExprPtr parse_postfix(ExprPtr node) {
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

    ExprPtr parse_subscript(ExprPtr node, int line) {
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

    // "(" arguments ")" into e->args (after the existing ones) and e->kwargs.
    void parse_call_args(Expr &e) {
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

    ExprPtr parse_call(ExprPtr callee) {
        ExprPtr e = make(ExprKind::Call, peek().line);
        e->args.push_back(std::move(callee));
        parse_call_args(*e);
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
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

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
    return Parser(lex(source)).parse_all();
}

}  // namespace pagoda::tok::jinja
