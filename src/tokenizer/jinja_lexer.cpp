#include "tokenizer/jinja_lexer.hpp"

#include <cctype>
#include <cstring>

#include "tokenizer/jinja_error.hpp"
#include "tokenizer/py_text.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok::jinja {

namespace {

// jinja2 splits the source on \r\n, \r and \n and joins it with \n, dropping a final empty line.
std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string src) : src_(std::move(src)) {}

    std::vector<Token> run() {
        bool line_starting = true;  // the previous tag ended a line (or nothing came before)
        while (pos_ < src_.size()) {
            const size_t tag = next_tag(pos_);
            if (tag == std::string::npos) {
                emit_text(src_.substr(pos_));
                break;
            }
            std::string text = src_.substr(pos_, tag - pos_);
            const char kind = src_[tag + 1];
            const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
            const int text_newlines = count_newlines(text);
            trim_before_tag(text, sign, kind != '{', line_starting);
            emit_text(std::move(text));
            line_ += text_newlines;
            pos_ = tag + 2 + (sign ? 1 : 0);
            if (kind == '#') skip_comment();
            else if (kind == '%' && lex_raw()) {}
            else lex_tag(kind == '{');
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        }
        tokens_.push_back({TokenType::End, "", line_});
        return std::move(tokens_);
    }

private:
    size_t next_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    static int count_newlines(std::string_view s) {
        int n = 0;
        for (char c : s) n += c == '\n';
        return n;
    }

    static bool all_space(std::string_view s) {
        for (char32_t c : py::code_points(s))
            if (!py::is_space(c)) return false;
        return true;
    }

    // The text before a tag opened with `sign`: `-` strips its trailing whitespace; else, before
    // a block or comment tag and unless `+`, lstrip_blocks drops the whitespace between the
    // line's start and the tag (`line_starting`: the text itself starts a line).
    static void trim_before_tag(std::string &text, char sign, bool block, bool line_starting) {
        if (sign == '-') {
            text = py::strip(text, std::nullopt, py::StripSide::Right);
        } else if (sign != '+' && block) {
            const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
            if ((line_start > 0 || line_starting) && line_start < text.size() && all_space(text.substr(line_start)))
                text.resize(line_start);
        }
    }

    void emit_text(std::string text) {
        if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), line_});
    }

    // Python's \s*: Unicode whitespace, counting lines.
    void skip_space() {
        while (pos_ < src_.size()) {
            const size_t n = utf8_step(src_, pos_);
            const char32_t c = utf8_decode_at(src_, pos_);  // lex() checked the source is UTF-8
            if (!py::is_space(c)) return;
            if (c == '\n') ++line_;
            pos_ += n;
        }
    }

    void skip_comment() {
        const int start_line = line_;
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) syntax_error("unterminated comment (missing '#}')", start_line);
        line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
        const char before = end > pos_ ? src_[end - 1] : 0;
        pos_ = end + 2;
        finish_tag(before == '-' ? '-' : before == '+' ? '+' : 0, true);
    }

    // After a closing delimiter: `-` eats the whitespace that follows; without a sign,
    // trim_blocks eats one newline after block and comment tags.
    void finish_tag(char sign, bool block) {
        if (sign == '-') {
            skip_space();
        } else if (sign == 0 && block && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
            ++line_;
        }
    }

    bool at(const char *s) const { return src_.compare(pos_, std::strlen(s), s) == 0; }

    // Matches "\s*<word>\s*[-+]?%}" at `p` (after a "{%" and its sign); on success returns the
    // closing sign ('-', '+' or 0) and sets `end` past "%}".
    bool match_tag_word(size_t p, const char *word, char &close_sign, size_t &end) const {
        auto skip = [&](size_t q) {
            while (q < src_.size() && py::is_space(static_cast<unsigned char>(src_[q]))) ++q;
            return q;
        };
        p = skip(p);
        const size_t n = std::strlen(word);
        if (src_.compare(p, n, word) != 0) return false;
        p = skip(p + n);
        close_sign = 0;
        if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) close_sign = src_[p++];
        if (src_.compare(p, 2, "%}") != 0) return false;
        end = p + 2;
        return true;
    }

    // {% raw %}...{% endraw %}: the text between is emitted as it is. Whitespace control as
    // jinja2 applies it: `-` on either tag strips, lstrip_blocks applies before {% endraw %},
    // trim_blocks after it (not after {% raw %}). Returns false when the tag is not raw.
    bool lex_raw() {
        char sign = 0;
        size_t after = 0;
        if (!match_tag_word(pos_, "raw", sign, after)) return false;
        const int start_line = line_;
        line_ += count_newlines(std::string_view(src_).substr(pos_, after - pos_));
        pos_ = after;
        if (sign == '-') skip_space();
        const bool line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        for (size_t at_tag = src_.find("{%", pos_); at_tag != std::string::npos; at_tag = src_.find("{%", at_tag + 2)) {
            const char open_sign = at_tag + 2 < src_.size() && (src_[at_tag + 2] == '-' || src_[at_tag + 2] == '+') ? src_[at_tag + 2] : 0;
            char close_sign = 0;
            size_t end = 0;
            if (!match_tag_word(at_tag + 2 + (open_sign ? 1 : 0), "endraw", close_sign, end)) continue;
            std::string text = src_.substr(pos_, at_tag - pos_);
            const int text_newlines = count_newlines(text);
            trim_before_tag(text, open_sign, true, line_starting);
            emit_text(std::move(text));
            line_ += text_newlines + count_newlines(std::string_view(src_).substr(at_tag, end - at_tag));
            pos_ = end;
            finish_tag(close_sign, true);
            return true;
        }
        syntax_error("missing '{% endraw %}' for the raw block opened here", start_line);
    }

    void lex_tag(bool variable) {
        const int start_line = line_;
        tokens_.push_back({variable ? TokenType::VarBegin : TokenType::BlockBegin, "", line_});
        std::string brackets;  // open ( [ { awaiting their close
        while (true) {
            skip_space();
            if (pos_ >= src_.size())
                syntax_error(std::string("unexpected end of template: the tag opened here is not closed with '") +
                                 (variable ? "}}" : "%}") + "'",
                             start_line);
            if (brackets.empty()) {
                const char *close = variable ? "}}" : "%}";
                for (const char sign : {'-', '+', '\0'}) {
                    if (sign == '+' && variable) continue;
                    const std::string marker = sign ? std::string(1, sign) + close : std::string(close);
                    if (at(marker.c_str())) {
                        tokens_.push_back({variable ? TokenType::VarEnd : TokenType::BlockEnd, "", line_});
                        pos_ += marker.size();
                        finish_tag(sign, !variable);
                        return;
                    }
                }
            }
            lex_expression_token(brackets);
        }
    }

    void lex_expression_token(std::string &brackets) {
        const char c = src_[pos_];
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t end = pos_;
            while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
            tokens_.push_back({TokenType::Name, src_.substr(pos_, end - pos_), line_});
            pos_ = end;
            return;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) return lex_number();
        if (c == '\'' || c == '"') return lex_string();
        static const char *const kOperators[] = {"**", "//", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~",
                                                 "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";"};
        for (const char *op : kOperators) {
            if (!at(op)) continue;
            const std::string text = op;
            if (text == "(" || text == "[" || text == "{") brackets += text;
            if (text == ")" || text == "]" || text == "}") {
                const char open = text == ")" ? '(' : text == "]" ? '[' : '{';
                if (brackets.empty() || brackets.back() != open) syntax_error("unexpected '" + text + "'", line_);
                brackets.pop_back();
            }
            tokens_.push_back({TokenType::Operator, text, line_});
            pos_ += text.size();
            return;
        }
        const size_t n = utf8_step(src_, pos_);
        syntax_error("unexpected character '" + src_.substr(pos_, n) + "'", line_);
    }

    void lex_number() {
        size_t end = pos_;
        auto digits = [&](auto is_digit) {
            while (end < src_.size() && (is_digit(src_[end]) || (src_[end] == '_' && end + 1 < src_.size() && is_digit(src_[end + 1]))))
                ++end;
        };
        auto dec = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; };
        // 0x / 0o / 0b integers
        if (src_[pos_] == '0' && pos_ + 2 < src_.size() && std::strchr("xXoObB", src_[pos_ + 1]) != nullptr) {
            end = pos_ + 2;
            if (end < src_.size() && src_[end] == '_') ++end;
            digits([](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
            tokens_.push_back({TokenType::Integer, src_.substr(pos_, end - pos_), line_});
            pos_ = end;
            return;
        }
        digits(dec);
        bool is_float = false;
        // "x.0.1" is attribute access, not a float: a number right after '.' stays an integer.
        const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::Operator && tokens_.back().text == ".";
        if (!after_dot && end + 1 < src_.size() && src_[end] == '.' && dec(src_[end + 1])) {
            ++end;
            digits(dec);
            is_float = true;
        }
        if (!after_dot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
            size_t e = end + 1;
            if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
            if (e < src_.size() && dec(src_[e])) {
                end = e;
                digits(dec);
                is_float = true;
            }
        }
        tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, src_.substr(pos_, end - pos_), line_});
        pos_ = end;
    }

    // A string literal, decoded as Python's unicode-escape codec does.
    void lex_string() {
        const int start_line = line_;
        const char quote = src_[pos_++];
        std::string value;
        while (true) {
            if (pos_ >= src_.size()) syntax_error("unterminated string literal", start_line);
            const char c = src_[pos_];
            if (c == quote) {
                ++pos_;
                break;
            }
            if (c == '\n') ++line_;
            if (c != '\\') {
                value += c;
                ++pos_;
                continue;
            }
            if (pos_ + 1 >= src_.size()) syntax_error("unterminated string literal", start_line);
            const char e = src_[pos_ + 1];
            pos_ += 2;
            switch (e) {
            case '\n': ++line_; break;  // a backslash-newline continues the line
            case '\\': value += '\\'; break;
            case '\'': value += '\''; break;
            case '"': value += '"'; break;
            case 'a': value += '\a'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'n': value += '\n'; break;
            case 'r': value += '\r'; break;
            case 't': value += '\t'; break;
            case 'v': value += '\v'; break;
            case 'x': append_code_point(value, hex_escape(2, start_line)); break;
            case 'u': append_code_point(value, hex_escape(4, start_line)); break;
            case 'U': append_code_point(value, hex_escape(8, start_line)); break;
            case 'N': unsupported("the \\N{...} string escape", start_line);
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t v = uint32_t(e - '0');
                    for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
                        v = v * 8 + uint32_t(src_[pos_++] - '0');
                    append_code_point(value, v);
                } else {
                    value += '\\';  // Python keeps unknown escapes as written
                    --pos_;
                }
            }
        }
        tokens_.push_back({TokenType::String, std::move(value), start_line});
    }

    uint32_t hex_escape(int digits, int line) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
                syntax_error("truncated \\x, \\u or \\U escape in a string literal", line);
            const char h = src_[pos_++];
            v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        if (v > 0x10FFFF) syntax_error("string escape past U+10FFFF", line);
        return v;
    }

    void append_code_point(std::string &out, uint32_t v) {
        // A lone surrogate cannot be UTF-8; Python would carry it and fail when encoding.
        if (v >= 0xD800 && v <= 0xDFFF) unsupported("a surrogate code point escape in a string literal", line_);
        append_utf8(out, char32_t(v));
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
    if (!is_valid_utf8(source)) syntax_error("the template is not valid UTF-8", 0);
    return Lexer(normalize_newlines(source)).run();
}

}  // namespace pagoda::tok::jinja
