#include "tokenizer/jinja_parser.hpp"

#include <initializer_list>

#include "tokenizer/jinja_expr_parser.hpp"
#include "tokenizer/jinja_lexer.hpp"

namespace pagoda::tok::jinja {

namespace {

// Statements: text, {{ output }}, and the tags; expressions are ExpressionParser's.
class Parser : ExpressionParser {
public:
    using ExpressionParser::ExpressionParser;

    Body parse_all() {
        Body body = parse_body({});
        if (peek().type != TokenType::End) syntax_error("unexpected '" + describe(peek()) + "'", peek().line);
        return body;
    }

private:
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

    int loop_depth_ = 0;  // loops around the statement being parsed (break/continue need one)
};

}  // namespace

Body parse_template(std::string_view source) {
    return Parser(lex(source)).parse_all();
}

}  // namespace pagoda::tok::jinja
