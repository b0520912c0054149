// A regular expression as a tree (code point sets, sequences, alternatives, counted
// repetitions), as regex_parser.cpp reads it from a pattern; regex_nullable.cpp rewrites it and
// regex_to_gbnf.cpp writes it out as GBNF. The dialect is the one regex_to_gbnf.hpp documents.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::grammar::regex {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, disjoint, non-adjacent closed ranges of code points.
class CodePointSet {
public:
    using Range = std::pair<uint32_t, uint32_t>;

    static CodePointSet single(uint32_t cp) {
        CodePointSet s;
        s.add(cp, cp);
        return s;
    }
    void add(uint32_t lo, uint32_t hi);
    void add(const CodePointSet &other);
    // Every other code point but the surrogates.
    CodePointSet complement() const;
    CodePointSet intersect(uint32_t lo, uint32_t hi) const;
    CodePointSet minus(const CodePointSet &other) const;
    bool contains(uint32_t cp) const;
    bool empty() const { return ranges_.empty(); }
    bool is_single() const { return ranges_.size() == 1 && ranges_[0].first == ranges_[0].second; }
    const std::vector<Range> &ranges() const { return ranges_; }

private:
    void normalize();
    std::vector<Range> ranges_;
};

// A regular language as a tree. `chars` is one code point from `set`; `repeat` is its one child
// `min` to `max` times (`max` absent: unbounded).
struct Node {
    enum class Kind : uint8_t { empty, chars, seq, alt, repeat };
    Kind kind = Kind::empty;
    CodePointSet set;
    std::vector<Node> children;
    uint32_t min = 0;
    std::optional<uint32_t> max;

    static Node of(Kind k) {
        Node n;
        n.kind = k;
        return n;
    }
};

// A top-level alternative and its anchors.
struct Branch {
    Node body;
    bool anchored_start = false;
    bool anchored_end = false;
};

// The pattern's top-level alternatives. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) "regex:
// <construct> at offset <n> ..." for anything outside the dialect.
std::vector<Branch> parse_regex(std::string_view pattern);

}  // namespace pagoda::grammar::regex
