// From GBNF syntax to the byte-level Grammar: literals become byte sequences, character classes
// UTF-8 byte-range sequences (one byte set when they stay in ASCII), groups and repetitions
// helper rules. Then the checks the top-down matcher needs: every name defined, a root, no left
// recursion.
#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "common/error.hpp"
#include "grammar/gbnf_syntax.hpp"
#include "grammar/grammar.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::grammar {

namespace {

using syntax::CodeRange;
using syntax::Item;

// One UTF-8 encoded length's worth of a code point range, as per-byte ranges.
using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// Splits [lo, hi] until each piece's encodings are a product of byte ranges: same length, and
// for each continuation byte either the whole 0x80-0xBF span or a fixed prefix above it.
void utf8_pieces(uint32_t lo, uint32_t hi, std::vector<ByteRanges> &out) {
    static const uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF};
    for (uint32_t end : kLengthEnds)
        if (lo <= end && hi > end) {
            utf8_pieces(lo, end, out);
            utf8_pieces(end + 1, hi, out);
            return;
        }
    std::string a, b;
    tok::append_utf8(a, lo);
    tok::append_utf8(b, hi);
    const int n = int(a.size());
    for (int i = 1; i < n; ++i) {
        const uint32_t mask = (uint32_t{1} << (6 * i)) - 1;
        if ((lo & ~mask) == (hi & ~mask)) continue;
        if ((lo & mask) != 0) {
            utf8_pieces(lo, lo | mask, out);
            utf8_pieces((lo | mask) + 1, hi, out);
            return;
        }
        if ((hi & mask) != mask) {
            utf8_pieces(lo, (hi & ~mask) - 1, out);
            utf8_pieces(hi & ~mask, hi, out);
            return;
        }
    }
    ByteRanges piece;
    for (int i = 0; i < n; ++i) piece.push_back({uint8_t(a[size_t(i)]), uint8_t(b[size_t(i)])});
    out.push_back(std::move(piece));
}

class Lowering {
public:
    Grammar run(const std::vector<syntax::RuleText> &rules) {
        for (const syntax::RuleText &r : rules) {
            index_[r.name] = uint32_t(grammar_.rules.size());
            grammar_.rules.push_back({r.name, {}});
            places_.push_back(r.place);
        }
        auto root = index_.find("root");
        if (root == index_.end())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "grammar: no rule named 'root' (the start rule)");
        grammar_.root = root->second;
        for (size_t i = 0; i < rules.size(); ++i) {
            current_ = rules[i].name;
            grammar_.rules[i].alternatives = lower(rules[i].body);
        }
        refuse_left_recursion();
        return std::move(grammar_);
    }

private:
    [[noreturn]] static void fail(const syntax::Place &p, const std::string &what) {
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "grammar " + p.text() + ": " + what);
    }

    void count(size_t elements, const syntax::Place &p) {
        elements_ += elements;
        if (elements_ > kMaxElements || grammar_.rules.size() > kMaxRules)
            fail(p, "the grammar grows past " + std::to_string(kMaxElements) + " elements or " +
                        std::to_string(kMaxRules) + " rules (repetition counts multiply)");
    }

    uint32_t byte_set(const ByteSet &set) {
        auto [it, added] = byte_set_index_.try_emplace(set.bits, uint32_t(grammar_.byte_sets.size()));
        if (added) grammar_.byte_sets.push_back(set);
        return it->second;
    }
    Element byte_element(uint8_t lo, uint8_t hi) {
        ByteSet s;
        s.add_range(lo, hi);
        return {Element::Kind::bytes, byte_set(s)};
    }

    uint32_t helper(std::vector<Sequence> alternatives, const syntax::Place &p) {
        grammar_.rules.push_back({current_ + "-" + std::to_string(++helpers_), std::move(alternatives)});
        places_.push_back(p);
        count(1, p);
        return uint32_t(grammar_.rules.size() - 1);
    }
    static Element ref(uint32_t rule) { return {Element::Kind::rule, rule}; }

    std::vector<Sequence> lower(const syntax::Alternatives &alts) {
        std::vector<Sequence> out;
        for (const std::vector<Item> &items : alts.sequences) {
            Sequence seq;
            for (const Item &item : items) append(item, seq);
            out.push_back(std::move(seq));
        }
        return out;
    }

    // A class: one byte set while it stays in ASCII, else a helper rule of UTF-8 alternatives
    // (shared by every class with the same ranges, as `.` is used again and again).
    Element char_class(const Item &item) {
        if (!item.ranges.empty() && item.ranges.back().last < 0x80) {
            ByteSet s;
            for (const CodeRange &r : item.ranges) s.add_range(uint8_t(r.first), uint8_t(r.last));
            return {Element::Kind::bytes, byte_set(s)};
        }
        std::vector<uint32_t> key;
        for (const CodeRange &r : item.ranges) key.insert(key.end(), {r.first, r.last});
        auto known = class_rules_.find(key);
        if (known != class_rules_.end()) return ref(known->second);
        std::vector<ByteRanges> pieces;
        for (const CodeRange &r : item.ranges) utf8_pieces(r.first, r.last, pieces);
        std::vector<Sequence> alts;
        ByteSet ascii;
        bool any_ascii = false;
        for (const ByteRanges &piece : pieces) {
            if (piece.size() == 1) {
                ascii.add_range(piece[0].first, piece[0].second);
                any_ascii = true;
                continue;
            }
            Sequence seq;
            for (const auto &[lo, hi] : piece) seq.push_back(byte_element(lo, hi));
            count(seq.size(), item.place);
            alts.push_back(std::move(seq));
        }
        if (any_ascii) alts.insert(alts.begin(), Sequence{{Element::Kind::bytes, byte_set(ascii)}});
        const uint32_t rule = helper(std::move(alts), item.place);
        class_rules_[key] = rule;
        return ref(rule);
    }

    // One occurrence of the item, before its repetition.
    Sequence unit(const Item &item) {
        switch (item.kind) {
        case Item::Kind::literal: {
            Sequence seq;
            for (char c : item.bytes) seq.push_back(byte_element(uint8_t(c), uint8_t(c)));
            return seq;
        }
        case Item::Kind::char_class:
            return {char_class(item)};
        case Item::Kind::rule_ref: {
            auto it = index_.find(item.bytes);
            if (it == index_.end()) fail(item.place, "rule '" + item.bytes + "' is not defined");
            return {ref(it->second)};
        }
        case Item::Kind::group: {
            std::vector<Sequence> alts = lower(*item.group);
            if (alts.size() == 1) return std::move(alts[0]);
            return {ref(helper(std::move(alts), item.place))};
        }
        }
        return {};
    }

    void append(const Item &item, Sequence &seq) {
        Sequence one = unit(item);
        if (item.min_repeat == 1 && item.max_repeat == 1) {
            count(one.size(), item.place);
            seq.insert(seq.end(), one.begin(), one.end());
            return;
        }
        // Copies repeat one element: a rule for the item when it spans several.
        const Element e = one.size() == 1 ? one[0] : ref(helper({std::move(one)}, item.place));
        count(item.min_repeat, item.place);
        seq.insert(seq.end(), item.min_repeat, e);
        if (item.max_repeat == Item::kUnbounded) {
            // star ::= e star | ""  (right recursion: the matcher's tail call keeps it flat)
            const uint32_t star = helper({}, item.place);
            grammar_.rules[star].alternatives = {{e, ref(star)}, {}};
            count(2, item.place);
            seq.push_back(ref(star));
            return;
        }
        // Up to k more: opt_1 ::= e | "",  opt_j ::= e opt_(j-1) | "".
        uint32_t optional = UINT32_MAX;
        for (uint32_t j = item.min_repeat; j < item.max_repeat; ++j) {
            Sequence more = {e};
            if (optional != UINT32_MAX) more.push_back(ref(optional));
            count(more.size(), item.place);
            optional = helper({std::move(more), {}}, item.place);
        }
        if (optional != UINT32_MAX) seq.push_back(ref(optional));
    }

    // A rule that can reach itself before reading a byte would send the top-down matcher round
    // forever: find such a cycle among "may start with" edges (through nullable prefixes).
    void refuse_left_recursion() {
        const size_t n = grammar_.rules.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const Sequence &seq : grammar_.rules[r].alternatives)
                    if (std::all_of(seq.begin(), seq.end(), [&](const Element &e) {
                            return e.kind == Element::Kind::rule && nullable[e.index];
                        })) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
            }
        }
        std::vector<std::vector<uint32_t>> starts(n);
        for (size_t r = 0; r < n; ++r)
            for (const Sequence &seq : grammar_.rules[r].alternatives)
                for (const Element &e : seq) {
                    if (e.kind != Element::Kind::rule) break;
                    starts[r].push_back(e.index);
                    if (!nullable[e.index]) break;
                }
        // Iterative DFS with colours: 0 unseen, 1 on the path, 2 done.
        std::vector<uint8_t> colour(n, 0);
        for (size_t start = 0; start < n; ++start) {
            if (colour[start] != 0) continue;
            std::vector<std::pair<uint32_t, size_t>> path = {{uint32_t(start), 0}};
            colour[start] = 1;
            while (!path.empty()) {
                auto &[r, next] = path.back();
                if (next == starts[r].size()) {
                    colour[r] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t s = starts[r][next++];
                if (colour[s] == 1) {
                    std::string cycle;
                    bool in = false;
                    for (const auto &[q, unused] : path) {
                        in = in || q == s;
                        if (in) cycle += "'" + grammar_.rules[q].name + "' -> ";
                    }
                    fail(places_[s], "rule '" + grammar_.rules[s].name +
                                         "' is left-recursive (" + cycle + "'" +
                                         grammar_.rules[s].name +
                                         "' before reading a character): rewrite it with "
                                         "repetition or right recursion");
                }
                if (colour[s] == 0) {
                    colour[s] = 1;
                    path.push_back({s, 0});
                }
            }
        }
    }

    Grammar grammar_;
    std::unordered_map<std::string, uint32_t> index_;
    std::vector<syntax::Place> places_;
    std::map<std::vector<uint32_t>, uint32_t> class_rules_;
    std::map<std::array<uint64_t, 4>, uint32_t> byte_set_index_;
    std::string current_;
    size_t helpers_ = 0;
    size_t elements_ = 0;
};

}  // namespace

size_t Grammar::element_count() const {
    size_t n = 0;
    for (const Rule &r : rules)
        for (const Sequence &s : r.alternatives) n += s.size();
    return n;
}

Grammar parse_gbnf(std::string_view text) { return Lowering().run(syntax::parse(text)); }

std::string gbnf_literal(std::string_view bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out = "\"";
    for (char ch : bytes) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        } else {
            out += ch;  // UTF-8 passes through: the parser reads it as the same code points
        }
    }
    return out + "\"";
}

}  // namespace pagoda::grammar
