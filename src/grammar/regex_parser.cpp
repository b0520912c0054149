// Regular expression → tree (regex_syntax.hpp): code point sets, the classes \d \w \s, and a
// recursive-descent parser for the dialect regex_to_gbnf.hpp documents. Only regular constructs
// are accepted, so the tree is exact; anything else is refused by name with its offset.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/regex_syntax.hpp"

namespace pagoda::grammar::regex {

void CodePointSet::add(uint32_t lo, uint32_t hi) {
    ranges_.emplace_back(lo, hi);
    normalize();
}

void CodePointSet::add(const CodePointSet &other) {
    ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
    normalize();
}

CodePointSet CodePointSet::complement() const {
    CodePointSet out;
    uint32_t next = 0;
    for (const Range &r : ranges_) {
        if (r.first > next) out.ranges_.emplace_back(next, r.first - 1);
        next = r.second + 1;
    }
    if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
    // Surrogates are not characters: UTF-8 cannot carry them.
    std::vector<Range> kept;
    for (const Range &r : out.ranges_) {
        if (r.first < 0xD800) kept.emplace_back(r.first, std::min<uint32_t>(r.second, 0xD7FF));
        if (r.second > 0xDFFF) kept.emplace_back(std::max<uint32_t>(r.first, 0xE000), r.second);
    }
    out.ranges_ = std::move(kept);
    return out;
}

CodePointSet CodePointSet::intersect(uint32_t lo, uint32_t hi) const {
    CodePointSet out;
    for (const Range &r : ranges_) {
        const uint32_t a = std::max(r.first, lo), b = std::min(r.second, hi);
        if (a <= b) out.ranges_.emplace_back(a, b);
    }
    return out;
}

CodePointSet CodePointSet::minus(const CodePointSet &other) const {
    CodePointSet out;
    for (const Range &r : other.complement().ranges_) out.add(intersect(r.first, r.second));
    return out;
}

bool CodePointSet::contains(uint32_t cp) const {
    for (const Range &r : ranges_)
        if (r.first <= cp && cp <= r.second) return true;
    return false;
}

void CodePointSet::normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<Range> merged;
    for (const Range &r : ranges_) {
        if (!merged.empty() && r.first <= merged.back().second + 1)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    }
    ranges_ = std::move(merged);
}

namespace {

// Group nesting: the parser recurses once per level.
constexpr int kMaxDepth = 48;

[[noreturn]] void refuse(const std::string &what, size_t offset, const std::string &why) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                "regex: " + what + " at offset " + std::to_string(offset) + " " + why);
}

CodePointSet digit_set() {
    CodePointSet s;
    s.add('0', '9');
    return s;
}

CodePointSet word_set() {
    CodePointSet s;
    s.add('0', '9');
    s.add('A', 'Z');
    s.add('a', 'z');
    s.add('_', '_');
    return s;
}

// ECMAScript's WhiteSpace and LineTerminator code points.
CodePointSet space_set() {
    CodePointSet s;
    s.add(0x09, 0x0D);
    s.add(0x20, 0x20);
    s.add(0xA0, 0xA0);
    s.add(0x1680, 0x1680);
    s.add(0x2000, 0x200A);
    s.add(0x2028, 0x2029);
    s.add(0x202F, 0x202F);
    s.add(0x205F, 0x205F);
    s.add(0x3000, 0x3000);
    s.add(0xFEFF, 0xFEFF);
    return s;
}

class RegexParser {
public:
    explicit RegexParser(std::string_view pattern) : p_(pattern) {}

    std::vector<Branch> parse() {
        std::vector<Branch> branches;
        for (;;) {
            Branch b;
            if (peek() == '^') {
                ++pos_;
                b.anchored_start = true;
            }
            b.body = parse_sequence(0, &b.anchored_end);
            branches.push_back(std::move(b));
            if (at_end()) break;
            if (peek() == ')') refuse("')'", pos_, "has no matching '('");
            ++pos_;  // '|'
        }
        return branches;
    }

private:
    bool at_end() const { return pos_ >= p_.size(); }
    char peek(size_t ahead = 0) const {
        return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0';
    }

    // One UTF-8 code point of the pattern.
    uint32_t next_code_point() {
        const size_t start = pos_;
        const auto b0 = uint8_t(p_[pos_++]);
        if (b0 < 0x80) return b0;
        int extra = 0;
        uint32_t cp = 0;
        if ((b0 & 0xE0) == 0xC0) {
            extra = 1;
            cp = b0 & 0x1F;
        } else if ((b0 & 0xF0) == 0xE0) {
            extra = 2;
            cp = b0 & 0x0F;
        } else if ((b0 & 0xF8) == 0xF0) {
            extra = 3;
            cp = b0 & 0x07;
        } else {
            refuse("invalid UTF-8", start, "in the pattern");
        }
        for (int i = 0; i < extra; ++i) {
            if (at_end() || (uint8_t(p_[pos_]) & 0xC0) != 0x80)
                refuse("invalid UTF-8", start, "in the pattern");
            cp = (cp << 6) | (uint8_t(p_[pos_++]) & 0x3F);
        }
        static const uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMinForLength[extra] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF))
            refuse("invalid UTF-8", start, "in the pattern");
        return cp;
    }

    // Alternatives up to ')' or the end (not consumed).
    Node parse_alternatives(int depth) {
        Node alt = Node::of(Node::Kind::alt);
        for (;;) {
            alt.children.push_back(parse_sequence(depth, nullptr));
            if (peek() != '|' || at_end()) break;
            ++pos_;
        }
        if (alt.children.size() == 1) return std::move(alt.children[0]);
        return alt;
    }

    // Items up to '|', ')' or the end. `anchored_end` is set for a top-level sequence (nullptr
    // inside groups, where '$' is refused) that ends in '$'.
    Node parse_sequence(int depth, bool *anchored_end) {
        Node seq = Node::of(Node::Kind::seq);
        while (!at_end() && peek() != '|' && peek() != ')') {
            const size_t start = pos_;
            const char c = peek();
            if (c == '$') {
                ++pos_;
                if (anchored_end == nullptr || (!at_end() && peek() != '|'))
                    refuse("anchor '$'", start, "is only supported at the end of the pattern");
                *anchored_end = true;
                break;
            }
            if (c == '^')
                refuse("anchor '^'", start, "is only supported at the start of the pattern");
            if (c == '*' || c == '+' || c == '?' || c == '{')
                refuse(std::string("quantifier '") + c + "'", start, "has nothing to repeat");
            Node atom = parse_atom(depth);
            seq.children.push_back(parse_quantifiers(std::move(atom)));
        }
        if (seq.children.size() == 1) return std::move(seq.children[0]);
        return seq;
    }

    Node parse_quantifiers(Node atom) {
        if (at_end()) return atom;
        const size_t start = pos_;
        const char c = peek();
        uint32_t min = 0;
        std::optional<uint32_t> max;
        if (c == '*') {
            ++pos_;
        } else if (c == '+') {
            ++pos_;
            min = 1;
        } else if (c == '?') {
            ++pos_;
            max = 1;
        } else if (c == '{') {
            parse_counts(min, max);
        } else {
            return atom;
        }
        if (peek() == '?' && !at_end()) {
            ++pos_;  // lazy: the same language
        } else if (peek() == '+' && !at_end()) {
            const std::string written(p_.substr(start, pos_ + 1 - start));
            refuse("possessive quantifier '" + written + "'", start, "is not supported");
        }
        if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
            refuse(std::string("quantifier '") + peek() + "'", pos_,
                   "has nothing to repeat (it follows another quantifier)");
        Node rep = Node::of(Node::Kind::repeat);
        rep.min = min;
        rep.max = max;
        rep.children.push_back(std::move(atom));
        return rep;
    }

    // {n}, {n,} or {n,m}; anything else after '{' is refused rather than read as text, since
    // ECMAScript and Python disagree on it.
    void parse_counts(uint32_t &min, std::optional<uint32_t> &max) {
        const size_t start = pos_;
        ++pos_;
        const auto number = [&]() -> std::optional<uint32_t> {
            const size_t digits_start = pos_;
            uint64_t v = 0;
            while (!at_end() && peek() >= '0' && peek() <= '9') {
                v = std::min<uint64_t>(v * 10 + uint64_t(peek() - '0'), uint64_t{1} << 32);
                ++pos_;
            }
            if (pos_ == digits_start) return std::nullopt;
            if (v > kMaxRepeat)
                refuse("count " + std::string(p_.substr(digits_start, pos_ - digits_start)),
                       digits_start, "is past the limit of " + std::to_string(kMaxRepeat));
            return uint32_t(v);
        };
        const auto bad = [&]() {
            refuse("'{'", start, "does not start a quantifier {n}, {n,} or {n,m}; write '\\{'");
        };
        const std::optional<uint32_t> n = number();
        if (!n) bad();
        min = *n;
        if (peek() == '}') {
            max = min;
        } else if (peek() == ',') {
            ++pos_;
            if (peek() != '}') {
                const std::optional<uint32_t> m = number();
                if (!m || peek() != '}') bad();
                if (*m < min) refuse("quantifier", start, "has its maximum below its minimum");
                max = *m;
            }
        } else {
            bad();
        }
        ++pos_;  // '}'
    }

    Node chars(CodePointSet set) {
        Node n = Node::of(Node::Kind::chars);
        n.set = std::move(set);
        return n;
    }

    Node parse_atom(int depth) {
        const char c = peek();
        if (c == '(') return parse_group(depth);
        if (c == '[') return chars(parse_class());
        if (c == '.') {
            ++pos_;
            return chars(CodePointSet::single('\n').complement());
        }
        if (c == '\\') return chars(parse_escape(false));
        return chars(CodePointSet::single(next_code_point()));
    }

    Node parse_group(int depth) {
        const size_t start = pos_;
        if (depth >= kMaxDepth)
            refuse("group", start, "is nested past " + std::to_string(kMaxDepth) + " levels");
        ++pos_;
        if (peek() == '?') {
            const std::string_view rest = p_.substr(pos_);
            const auto starts = [&](std::string_view s) { return rest.substr(0, s.size()) == s; };
            if (starts("?:")) {
                pos_ += 2;
            } else if (starts("?=") || starts("?!")) {
                refuse("lookahead '(" + std::string(rest.substr(0, 2)) + "'", start,
                       "is not supported");
            } else if (starts("?<=") || starts("?<!")) {
                refuse("lookbehind '(" + std::string(rest.substr(0, 3)) + "'", start,
                       "is not supported");
            } else if (starts("?P=")) {
                refuse("backreference '(?P='", start, "is not supported");
            } else if (starts("?<") || starts("?P<")) {
                pos_ += starts("?<") ? 2 : 3;
                parse_group_name(start);
            } else if (starts("?#")) {
                refuse("comment '(?#'", start, "is not supported");
            } else if (starts("?>")) {
                refuse("atomic group '(?>'", start, "is not supported");
            } else if (rest.size() > 1 && (std::isalpha(uint8_t(rest[1])) || rest[1] == '-')) {
                refuse("inline flags '(" + std::string(rest.substr(0, 2)) + "'", start,
                       "are not supported");
            } else {
                refuse("group '(?'", start, "is not supported");
            }
        }
        Node inner = parse_alternatives(depth + 1);
        if (at_end()) refuse("'('", start, "is never closed");
        ++pos_;  // ')'
        return inner;
    }

    void parse_group_name(size_t group_start) {
        const size_t name_start = pos_;
        while (!at_end() && (std::isalnum(uint8_t(peek())) || peek() == '_')) ++pos_;
        if (pos_ == name_start || std::isdigit(uint8_t(p_[name_start])) || peek() != '>')
            refuse("group name", group_start, "is not a name followed by '>'");
        ++pos_;
    }

    uint32_t parse_hex(size_t digits, size_t escape_start, const std::string &what) {
        uint32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
            if (at_end() || !std::isxdigit(uint8_t(peek())))
                refuse("escape '" + what + "'", escape_start, "needs " + std::to_string(digits) +
                       " hex digits");
            v = v * 16 + uint32_t(std::isdigit(uint8_t(peek())) ? peek() - '0'
                                                              : (peek() | 0x20) - 'a' + 10);
            ++pos_;
        }
        return v;
    }

    // After '\': the code points it stands for. `in_class`: \b is a backspace there.
    CodePointSet parse_escape(bool in_class) {
        const size_t start = pos_;
        ++pos_;
        if (at_end()) refuse("'\\'", start, "ends the pattern");
        const char c = peek();
        const std::string name = std::string("'\\") + c + "'";
        if (uint8_t(c) >= 0x80) return CodePointSet::single(next_code_point());
        ++pos_;
        switch (c) {
        case 'd': return digit_set();
        case 'D': return digit_set().complement();
        case 'w': return word_set();
        case 'W': return word_set().complement();
        case 's': return space_set();
        case 'S': return space_set().complement();
        case 'n': return CodePointSet::single('\n');
        case 't': return CodePointSet::single('\t');
        case 'r': return CodePointSet::single('\r');
        case 'f': return CodePointSet::single('\f');
        case 'v': return CodePointSet::single('\v');
        case '0':
            if (std::isdigit(uint8_t(peek())) && !at_end())
                refuse("octal escape '\\0" + std::string(1, peek()) + "'", start,
                       "is not supported");
            return CodePointSet::single(0);
        case 'x': return CodePointSet::single(parse_hex(2, start, "\\x"));
        case 'u': {
            const uint32_t cp = parse_unicode_escape(start);
            if (cp >= 0xD800 && cp <= 0xDFFF)
                refuse("surrogate escape '\\u'", start, "is not supported");
            return CodePointSet::single(cp);
        }
        case 'b':
            if (in_class) return CodePointSet::single('\b');
            refuse("word boundary '\\b'", start, "is not supported");
        case 'B': refuse("word boundary '\\B'", start, "is not supported");
        case 'k': refuse("backreference '\\k'", start, "is not supported");
        case 'p':
        case 'P': refuse("Unicode property " + name, start, "is not supported");
        case 'A':
        case 'Z':
        case 'z':
        case 'G': refuse("anchor " + name, start, "is not supported");
        case 'c': refuse("control escape '\\c'", start, "is not supported");
        default: break;
        }
        if (c >= '1' && c <= '9') refuse("backreference " + name, start, "is not supported");
        if (std::isalnum(uint8_t(c))) refuse("escape " + name, start, "is not supported");
        if (uint8_t(c) < 0x20) refuse("escaped control character", start, "is not supported");
        return CodePointSet::single(uint8_t(c));
    }

    uint32_t parse_unicode_escape(size_t start) {
        if (peek() != '{' || at_end()) return parse_hex(4, start, "\\u");
        ++pos_;
        uint32_t v = 0;
        size_t digits = 0;
        while (!at_end() && std::isxdigit(uint8_t(peek()))) {
            v = v * 16 + uint32_t(std::isdigit(uint8_t(peek())) ? peek() - '0'
                                                              : (peek() | 0x20) - 'a' + 10);
            if (v > kMaxCodePoint) refuse("escape '\\u{'", start, "is past U+10FFFF");
            ++pos_;
            ++digits;
        }
        if (digits == 0 || peek() != '}' || at_end())
            refuse("escape '\\u{'", start, "needs hex digits and a '}'");
        ++pos_;
        return v;
    }

    // One class member: a code point, or a set (\d and the like), which cannot end a range.
    CodePointSet parse_class_atom(bool &is_set) {
        is_set = false;
        if (peek() != '\\') return CodePointSet::single(next_code_point());
        CodePointSet s = parse_escape(true);
        is_set = !s.is_single();
        // \D, \W and \S are complements: large, never single.
        return s;
    }

    CodePointSet parse_class() {
        const size_t start = pos_;
        ++pos_;
        bool negated = false;
        if (peek() == '^' && !at_end()) {
            ++pos_;
            negated = true;
        }
        if (peek() == ']' && !at_end())
            refuse("']' right after '['", start,
                   "reads differently in ECMAScript and Python; write '\\]'");
        CodePointSet set;
        for (;;) {
            if (at_end()) refuse("'['", start, "is never closed");
            if (peek() == ']') break;
            const size_t item_start = pos_;
            bool lo_is_set = false;
            CodePointSet lo = parse_class_atom(lo_is_set);
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {
                ++pos_;
                bool hi_is_set = false;
                CodePointSet hi = parse_class_atom(hi_is_set);
                if (lo_is_set || hi_is_set)
                    refuse("range", item_start, "has a class escape (\\d, \\w, \\s) for an end");
                const uint32_t a = lo.ranges()[0].first, b = hi.ranges()[0].first;
                if (a > b) refuse("range", item_start, "is out of order");
                set.add(a, b);
            } else {
                set.add(lo);
            }
        }
        ++pos_;  // ']'
        if (negated) set = set.complement();
        if (set.empty()) refuse("class", start, "matches no character");
        return set;
    }

    std::string_view p_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<Branch> parse_regex(std::string_view pattern) { return RegexParser(pattern).parse(); }

}  // namespace pagoda::grammar::regex
