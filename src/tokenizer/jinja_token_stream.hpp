// The parsers' view of the tokens: lookahead, expectations with messages that name what was found,
// and the nesting guard that keeps hostile input from exhausting the stack.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/jinja_ast.hpp"
#include "tokenizer/jinja_lexer.hpp"

namespace pagoda::tok::jinja {

// Deeper nesting than real templates use is refused (jinja2 itself stops at Python's recursion
// limit).
constexpr int kMaxParseDepth = 200;

class TokenStream {
public:
    explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

protected:
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
            if (++depth > kMaxParseDepth) unsupported("nesting deeper than " + std::to_string(kMaxParseDepth) + " levels", line);
        }
        ~DepthGuard() { --depth; }
    };

    static ExprPtr make(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
};

}  // namespace pagoda::tok::jinja
