// Regular expression → GBNF: regex_parser.cpp builds the tree (regex_syntax.hpp),
// regex_nullable.cpp rewrites its repetitions of nullable items, and this file writes the tree
// out as one GBNF expression, for raw text or for a JSON string's content.
#include "grammar/regex_to_gbnf.hpp"

#include <cctype>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/regex_nullable.hpp"
#include "grammar/regex_syntax.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::grammar {
namespace {

using regex::Branch;
using regex::CodePointSet;
using regex::grammar_cost;
using regex::kMaxCodePoint;
using regex::Node;
using regex::parse_regex;
using regex::without_nullable_repeats;

// Group nesting in the grammar: the writer recurses once per level.
constexpr int kMaxGbnfNesting = 48;
// The expression's text, and the rules and elements its counted repetitions expand to: past
// these the pattern is refused, well before the GBNF parser's own limits (kMaxRules) would
// refuse the grammar it sits in.
constexpr size_t kMaxPatternBytes = size_t{64} << 10;
constexpr size_t kMaxExpressionBytes = size_t{1} << 20;
constexpr uint64_t kMaxGrammarCost = kMaxRules / 4;

// The one spelling of `cp` inside a JSON string that the grammar admits (see RegexText).
void append_json_escaped(std::string &out, uint32_t cp) {
    static const char *const kHex = "0123456789abcdef";
    switch (cp) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
    }
    if (cp < 0x20) {
        out += "\\u00";
        out += kHex[cp >> 4];
        out += kHex[cp & 15];
        return;
    }
    tok::append_utf8(out, cp);
}

// Writes nodes as GBNF, for raw text or for a JSON string's content.
class GbnfWriter {
public:
    explicit GbnfWriter(RegexText text) : json_(text == RegexText::json_string_content) {}

    std::string take() { return std::move(out_); }

    void write_alternatives(const std::vector<std::string> &alternatives) {
        for (size_t i = 0; i < alternatives.size(); ++i) {
            if (i) append(" | ");
            append(alternatives[i]);
        }
    }

    // Any code point, for the unanchored sides of a search.
    std::string any_char() const {
        if (!json_) return ".";
        CodePointSet every;
        every.add(0, kMaxCodePoint);
        return "(" + class_text(every) + ")";
    }

    // `n` as GBNF text, which may hold a top-level `|` (in a sequence it needs parentheses).
    void write(const Node &n) {
        switch (n.kind) {
        case Node::Kind::empty: append("\"\""); return;
        case Node::Kind::chars: write_atom(n); return;
        case Node::Kind::alt:
            for (size_t i = 0; i < n.children.size(); ++i) {
                if (i) append(" | ");
                write_sequence_item(n.children[i], true);
            }
            return;
        case Node::Kind::seq: write_sequence(n); return;
        case Node::Kind::repeat: write_repeat(n); return;
        }
    }

private:
    // Parentheses: the GBNF parser refuses nesting past 64 levels, and whoever embeds the
    // expression adds a few.
    void open() {
        if (++open_groups_ > kMaxGbnfNesting)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "regex: groups nest too deeply (past " + std::to_string(kMaxGbnfNesting) +
                            " levels in the grammar)");
        append("(");
    }
    void close() {
        --open_groups_;
        append(")");
    }

    void append(std::string_view s) {
        out_ += s;
        if (out_.size() > kMaxExpressionBytes)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "regex: the pattern's grammar is past " +
                            std::to_string(kMaxExpressionBytes) + " bytes");
    }

    static bool is_literal_char(const Node &n) {
        return n.kind == Node::Kind::chars && n.set.is_single();
    }

    void write_sequence(const Node &n) {
        if (n.children.empty()) {
            append("\"\"");
            return;
        }
        bool first = true;
        for (size_t i = 0; i < n.children.size();) {
            if (!first) append(" ");
            first = false;
            if (is_literal_char(n.children[i])) {
                // A run of single code points: one literal.
                std::string bytes;
                for (; i < n.children.size() && is_literal_char(n.children[i]); ++i)
                    append_char(bytes, n.children[i].set.ranges()[0].first);
                append(gbnf_literal(bytes));
                continue;
            }
            write_sequence_item(n.children[i], n.children.size() == 1);
            ++i;
        }
    }

    // An item of a sequence: alternatives need parentheses there (unless alone).
    void write_sequence_item(const Node &n, bool alone) {
        if (n.kind == Node::Kind::alt && !alone) {
            open();
            write(n);
            close();
        } else {
            write(n);
        }
    }

    void write_atom(const Node &n) {
        if (n.kind == Node::Kind::chars) {
            if (n.set.is_single()) {
                std::string bytes;
                append_char(bytes, n.set.ranges()[0].first);
                append(gbnf_literal(bytes));
            } else {
                const std::string cls = class_text(n.set);
                const bool simple = cls.find('|') == std::string::npos;
                append(simple ? cls : "(" + cls + ")");
            }
            return;
        }
        open();
        write(n);
        close();
    }

    void write_repeat(const Node &n) {
        const uint32_t min = n.min;
        const std::optional<uint32_t> max = n.max;
        write_atom(n.children[0]);
        if (min == 0 && !max) {
            append("*");
        } else if (min == 1 && !max) {
            append("+");
        } else if (min == 0 && max && *max == 1) {
            append("?");
        } else if (max && *max == min) {
            if (min != 1) append("{" + std::to_string(min) + "}");
        } else if (!max) {
            append("{" + std::to_string(min) + ",}");
        } else {
            append("{" + std::to_string(min) + "," + std::to_string(*max) + "}");
        }
    }

    void append_char(std::string &bytes, uint32_t cp) const {
        if (json_)
            append_json_escaped(bytes, cp);
        else
            tok::append_utf8(bytes, cp);
    }

    // A class bracket for code points that a JSON string may hold raw, or for any in raw text.
    static std::string bracket(const CodePointSet &all) {
        CodePointSet surrogates;
        surrogates.add(0xD800, 0xDFFF);
        const CodePointSet set = all.minus(surrogates);  // UTF-8 cannot carry them
        std::string out = "[";
        const auto put = [&](uint32_t cp) {
            static const char *const kHex = "0123456789ABCDEF";
            if (cp < 0x80 && std::isalnum(int(cp))) {
                out += char(cp);
                return;
            }
            const int digits = cp < 0x80 ? 2 : cp < 0x10000 ? 4 : 8;
            out += digits == 2 ? "\\x" : digits == 4 ? "\\u" : "\\U";
            for (int i = digits - 1; i >= 0; --i) out += kHex[(cp >> (4 * i)) & 15];
        };
        for (const auto &[lo, hi] : set.ranges()) {
            put(lo);
            if (hi != lo) {
                out += '-';
                put(hi);
            }
        }
        return out + "]";
    }

    // The class as GBNF alternatives: a bracket, and in a JSON string the escaped spellings of
    // the code points that may not appear raw there.
    std::string class_text(const CodePointSet &set) const {
        if (!json_) return bracket(set);
        CodePointSet escaped;
        escaped.add(0, 0x1F);
        escaped.add('"', '"');
        escaped.add('\\', '\\');
        std::vector<std::string> parts;
        if (const CodePointSet raw = set.minus(escaped); !raw.empty())
            parts.push_back(bracket(raw));
        if (set.contains('"')) parts.push_back(gbnf_literal("\\\""));
        if (set.contains('\\')) parts.push_back(gbnf_literal("\\\\"));
        const CodePointSet controls = set.intersect(0, 0x1F);
        if (controls.ranges().size() == 1 && controls.ranges()[0] == std::make_pair(0u, 0x1Fu)) {
            parts.push_back(gbnf_literal("\\") +
                            " ([bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f]))");
        } else {
            for (const auto &[lo, hi] : controls.ranges())
                for (uint32_t cp = lo; cp <= hi; ++cp) {
                    std::string bytes;
                    append_json_escaped(bytes, cp);
                    parts.push_back(gbnf_literal(bytes));
                }
        }
        std::string out;
        for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
        return out;
    }

    bool json_;
    int open_groups_ = 0;
    std::string out_;
};

}  // namespace

std::string regex_to_gbnf_expression(std::string_view pattern, RegexScope scope, RegexText text,
                                     size_t *grammar_size) {
    if (pattern.size() > kMaxPatternBytes)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "regex: the pattern is longer than " + std::to_string(kMaxPatternBytes) +
                        " bytes");
    std::vector<Branch> branches = parse_regex(pattern);
    size_t copy_budget = kMaxGrammarCost * 4;
    for (Branch &b : branches) b.body = without_nullable_repeats(b.body, copy_budget);
    uint64_t cost = 0;
    for (const Branch &b : branches) cost += grammar_cost(b.body);
    if (cost > kMaxGrammarCost)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "regex: the pattern's counted repetitions expand past " +
                        std::to_string(kMaxGrammarCost) + " grammar rules and elements");
    if (grammar_size) *grammar_size = size_t(cost);
    GbnfWriter writer(text);
    const std::string any = writer.any_char() + "*";
    std::vector<std::string> alternatives;
    for (const Branch &b : branches) {
        GbnfWriter body(text);
        body.write(b.body);
        std::string alt;
        const bool open_start = scope == RegexScope::search && !b.anchored_start;
        const bool open_end = scope == RegexScope::search && !b.anchored_end;
        if (open_start) alt += any + " ";
        alt += "(" + body.take() + ")";
        if (open_end) alt += " " + any;
        alternatives.push_back(std::move(alt));
    }
    writer.write_alternatives(alternatives);
    return writer.take();
}

std::string regex_to_gbnf(std::string_view pattern) {
    return "root ::= " + regex_to_gbnf_expression(pattern, RegexScope::whole, RegexText::raw) +
           "\n";
}

}  // namespace pagoda::grammar
