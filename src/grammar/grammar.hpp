// A context-free grammar over bytes: what every constraint (GBNF text, a regular expression, a
// JSON Schema) compiles to before it becomes token masks. Terminals are byte sets; Unicode
// character classes have been spelled out as UTF-8 byte sequences, repetitions as helper rules,
// so the matcher (matcher.hpp) only ever steps one byte through plain sequences.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::grammar {

// A set of byte values: 256 bits.
struct ByteSet {
    std::array<uint64_t, 4> bits{};

    bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1u; }
    void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
    void add_range(uint8_t lo, uint8_t hi) {
        for (unsigned b = lo; b <= hi; ++b) add(uint8_t(b));
    }
    bool operator==(const ByteSet &) const = default;
};

// One element of an alternative: a byte from `byte_sets[index]`, or the rule `rules[index]`.
struct Element {
    enum class Kind : uint8_t { bytes, rule };
    Kind kind = Kind::bytes;
    uint32_t index = 0;
    bool operator==(const Element &) const = default;
};

using Sequence = std::vector<Element>;

struct Rule {
    std::string name;                   // as written, or "<parent>-<n>" for helper rules
    std::vector<Sequence> alternatives; // an empty sequence matches the empty string
};

// Limits that keep a hostile grammar from taking the server's memory or time: rules (helper
// rules included) and elements in all, and the largest bounded repetition count.
constexpr size_t kMaxRules = 1u << 16;
constexpr size_t kMaxElements = 1u << 20;
constexpr uint32_t kMaxRepeat = 1000;

struct Grammar {
    std::vector<Rule> rules;
    std::vector<ByteSet> byte_sets;
    uint32_t root = 0;

    size_t element_count() const;
};

// Parses grammar text (the GBNF dialect documented in include/pagoda/request.h) into a Grammar
// whose root is the rule named `root`. Throws Error(PAGODA_ERR_INVALID_ARGUMENT) naming the
// construct and its line:column for a syntax error, an undefined rule, a missing root, a
// left-recursive rule (the matcher steps top-down and would never return), or a grammar past
// the limits above.
Grammar parse_gbnf(std::string_view text);

// Whether `text` as a whole is in the grammar's language. A plain byte-by-byte run of the
// matcher, for tests and for checking a constraint's own examples; not the token-mask path.
bool matches_fully(const Grammar &grammar, std::string_view text);

// A GBNF string literal for UTF-8 text: quoted, with ", \ and control characters escaped, so
// compilers that emit GBNF text can embed any value. (GBNF literals are text: a byte sequence
// that is not UTF-8 has no literal.)
std::string gbnf_literal(std::string_view bytes);

}  // namespace pagoda::grammar
