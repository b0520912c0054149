// Reads GBNF text (the dialect of include/pagoda/request.h) into syntax::RuleText: a
// recursive-descent parser over the characters, tracking line and column for its errors.
#include <algorithm>
#include <set>

#include "common/error.hpp"
#include "grammar/gbnf_syntax.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::grammar::syntax {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kSurrogateFirst = 0xD800, kSurrogateLast = 0xDFFF;
// Nesting of parentheses: bounded so hostile text cannot exhaust the parser's stack.
constexpr int kMaxGroupDepth = 64;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    std::vector<RuleText> rules() {
        std::vector<RuleText> out;
        std::set<std::string> defined;
        skip_space();
        while (!at_end()) {
            RuleText rule;
            rule.place = place();
            rule.name = name();
            if (rule.name.empty()) fail("expected a rule name, found " + describe_here());
            skip_space();
            if (!take("::=")) fail("expected '::=' after the rule name '" + rule.name + "'");
            if (!defined.insert(rule.name).second)
                fail_at(rule.place, "rule '" + rule.name + "' is defined twice");
            rule.body = alternatives(0);
            if (!at_end() && peek() == ')') fail("')' without a matching '('");
            if (!at_end() && peek() == '|') fail("'|' where a rule should start");
            out.push_back(std::move(rule));
        }
        if (out.empty()) fail("the grammar holds no rule");
        return out;
    }

private:
    [[noreturn]] void fail_at(const Place &p, const std::string &what) const {
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "grammar " + p.text() + ": " + what);
    }
    [[noreturn]] void fail(const std::string &what) const { fail_at(place(), what); }

    Place place() const { return {line_, uint32_t(pos_ - line_start_ + 1)}; }
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return text_[pos_]; }

    std::string describe_here() const {
        if (at_end()) return "the end of the text";
        const unsigned char c = static_cast<unsigned char>(peek());
        if (c < 0x20 || c >= 0x7f) return "byte 0x" + hex(c);
        return std::string("'") + peek() + "'";
    }
    static std::string hex(unsigned value) {
        static const char digits[] = "0123456789abcdef";
        std::string s;
        do {
            s.insert(s.begin(), digits[value & 15]);
            value >>= 4;
        } while (value != 0);
        return s;
    }

    void advance() {
        if (text_[pos_] == '\n') {
            ++line_;
            line_start_ = pos_ + 1;
        }
        ++pos_;
    }
    bool take(std::string_view s) {
        if (text_.substr(pos_, s.size()) != s) return false;
        for (size_t i = 0; i < s.size(); ++i) advance();
        return true;
    }

    void skip_space() {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                advance();
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') advance();
            } else {
                break;
            }
        }
    }

    std::string name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) advance();
        return std::string(text_.substr(start, pos_ - start));
    }

    // Whether the text here is `name ::=`: the start of the next rule, which ends a sequence.
    bool at_rule_start() const {
        size_t p = pos_;
        while (p < text_.size() && is_name_char(text_[p])) ++p;
        if (p == pos_) return false;
        while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
        return text_.substr(p, 3) == "::=";
    }

    Alternatives alternatives(int depth) {
        if (depth > kMaxGroupDepth)
            fail("parentheses nest deeper than " + std::to_string(kMaxGroupDepth));
        Alternatives alts;
        alts.sequences.push_back(sequence(depth));
        while (!at_end() && peek() == '|') {
            advance();
            alts.sequences.push_back(sequence(depth));
        }
        return alts;
    }

    std::vector<Item> sequence(int depth) {
        std::vector<Item> items;
        for (;;) {
            skip_space();
            if (at_end() || peek() == '|' || peek() == ')' || at_rule_start()) return items;
            Item item = primary(depth);
            repetition(item);
            items.push_back(std::move(item));
        }
    }

    Item primary(int depth) {
        Item item;
        item.place = place();
        const char c = peek();
        if (c == '"') {
            advance();
            item.kind = Item::Kind::literal;
            while (true) {
                if (at_end() || peek() == '\n') fail_at(item.place, "unterminated string literal");
                if (peek() == '"') break;
                tok::append_utf8(item.bytes, code_point());
            }
            advance();
        } else if (c == '[') {
            advance();
            item.kind = Item::Kind::char_class;
            item.ranges = char_class(item.place);
        } else if (c == '.') {
            advance();
            item.kind = Item::Kind::char_class;
            item.ranges = complement({});
        } else if (c == '(') {
            advance();
            item.kind = Item::Kind::group;
            item.group = std::make_shared<Alternatives>(alternatives(depth + 1));
            skip_space();
            if (at_end() || peek() != ')') fail_at(item.place, "'(' without a matching ')'");
            advance();
        } else if (is_name_char(c)) {
            item.kind = Item::Kind::rule_ref;
            item.bytes = name();
        } else {
            fail("unexpected " + describe_here());
        }
        return item;
    }

    void repetition(Item &item) {
        if (at_end()) return;
        const Place where = place();
        const char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            advance();
            item.min_repeat = c == '+' ? 1 : 0;
            item.max_repeat = c == '?' ? 1 : Item::kUnbounded;
        } else if (c == '{') {
            advance();
            item.min_repeat = count(where);
            item.max_repeat = item.min_repeat;
            if (!at_end() && peek() == ',') {
                advance();
                skip_inline_space();
                item.max_repeat = !at_end() && peek() == '}' ? Item::kUnbounded : count(where);
            }
            skip_inline_space();
            if (at_end() || peek() != '}') fail_at(where, "expected '}' to close the repetition");
            advance();
            if (item.max_repeat < item.min_repeat)
                fail_at(where, "repetition {" + std::to_string(item.min_repeat) + "," +
                                   std::to_string(item.max_repeat) + "} has max below min");
        } else {
            return;
        }
        if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
            fail("a repetition of a repetition: put the first in parentheses");
    }

    void skip_inline_space() {
        while (!at_end() && (peek() == ' ' || peek() == '\t')) advance();
    }

    uint32_t count(const Place &where) {
        skip_inline_space();
        if (at_end() || peek() < '0' || peek() > '9') fail_at(where, "expected a repetition count");
        uint64_t n = 0;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            n = n * 10 + uint64_t(peek() - '0');
            if (n > 1000) fail_at(where, "repetition count above the limit of 1000");
            advance();
        }
        skip_inline_space();
        return uint32_t(n);
    }

    // One character of a literal or class: an escape or a UTF-8 encoded code point.
    uint32_t code_point() {
        const Place where = place();
        const unsigned char c = static_cast<unsigned char>(peek());
        if (c == '\\') {
            advance();
            if (at_end()) fail_at(where, "'\\' at the end of the text");
            const char e = peek();
            advance();
            switch (e) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case '0': return 0;
            case 'x': return hex_digits(2, where);
            case 'u': return hex_digits(4, where);
            case 'U': return hex_digits(8, where);
            case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
                return uint32_t(e);
            default:
                fail_at(where, std::string("unknown escape '\\") + e + "'");
            }
        }
        // UTF-8 decoding, refusing malformed sequences (they could never be matched as text).
        int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
        if (extra < 0) fail_at(where, "invalid UTF-8 byte 0x" + hex(c));
        uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
        advance();
        for (int i = 0; i < extra; ++i) {
            if (at_end() || (static_cast<unsigned char>(peek()) & 0xC0) != 0x80)
                fail_at(where, "truncated UTF-8 sequence");
            cp = (cp << 6) | (static_cast<unsigned char>(peek()) & 0x3F);
            advance();
        }
        static const uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMinForLength[extra] || cp > kMaxCodePoint ||
            (cp >= kSurrogateFirst && cp <= kSurrogateLast))
            fail_at(where, "invalid UTF-8 sequence");
        return cp;
    }

    uint32_t hex_digits(int n, const Place &where) {
        uint64_t v = 0;
        for (int i = 0; i < n; ++i) {
            if (at_end()) fail_at(where, "escape needs " + std::to_string(n) + " hex digits");
            const char h = peek();
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) fail_at(where, "escape needs " + std::to_string(n) + " hex digits");
            v = v * 16 + uint64_t(d);
            advance();
        }
        if (v > kMaxCodePoint || (v >= kSurrogateFirst && v <= kSurrogateLast))
            fail_at(where, "escape names no Unicode scalar value");
        return uint32_t(v);
    }

    std::vector<CodeRange> char_class(const Place &where) {
        bool negated = false;
        if (!at_end() && peek() == '^') {
            advance();
            negated = true;
        }
        std::vector<CodeRange> ranges;
        while (true) {
            if (at_end() || peek() == '\n') fail_at(where, "unterminated character class");
            if (peek() == ']') break;
            const uint32_t first = code_point();
            uint32_t last = first;
            if (!at_end() && peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                advance();
                last = code_point();
                if (last < first) fail_at(where, "character class range runs backwards");
            }
            ranges.push_back({first, last});
        }
        advance();
        if (ranges.empty() && !negated) fail_at(where, "empty character class");
        ranges = merged(std::move(ranges));
        return negated ? complement(ranges) : ranges;
    }

    static std::vector<CodeRange> merged(std::vector<CodeRange> ranges) {
        std::sort(ranges.begin(), ranges.end(),
                  [](const CodeRange &a, const CodeRange &b) { return a.first < b.first; });
        std::vector<CodeRange> out;
        for (const CodeRange &r : ranges) {
            if (!out.empty() && r.first <= out.back().last + 1)
                out.back().last = std::max(out.back().last, r.last);
            else
                out.push_back(r);
        }
        return out;
    }

    // Every Unicode scalar value not in `ranges` (sorted, merged); surrogates are never text.
    static std::vector<CodeRange> complement(const std::vector<CodeRange> &ranges) {
        std::vector<CodeRange> holes = ranges;
        holes.push_back({kSurrogateFirst, kSurrogateLast});
        holes = merged(std::move(holes));
        std::vector<CodeRange> out;
        uint32_t next = 0;
        for (const CodeRange &h : holes) {
            if (h.first > next) out.push_back({next, h.first - 1});
            next = h.last + 1;
        }
        if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
        return out;
    }

    std::string_view text_;
    size_t pos_ = 0;
    uint32_t line_ = 1;
    size_t line_start_ = 0;
};

}  // namespace

std::vector<RuleText> parse(std::string_view text) { return Parser(text).rules(); }

}  // namespace pagoda::grammar::syntax
