// The GBNF text as written: rules of alternatives of items, each item with its repetition, and
// where each was written. gbnf_parser.cpp reads text into it; grammar_lowering.cpp turns it
// into the byte-level Grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pagoda::grammar::syntax {

// Where something was written, for error messages: 1-based line and column.
struct Place {
    uint32_t line = 1;
    uint32_t column = 1;
    std::string text() const { return std::to_string(line) + ":" + std::to_string(column); }
};

// Inclusive Unicode code point range.
struct CodeRange {
    uint32_t first = 0;
    uint32_t last = 0;
};

struct Alternatives;

struct Item {
    enum class Kind { literal, char_class, rule_ref, group };
    Kind kind = Kind::literal;
    Place place;
    std::string bytes;                    // literal: its UTF-8 bytes; rule_ref: the name
    std::vector<CodeRange> ranges;        // char_class: sorted, merged, negation applied
    std::shared_ptr<Alternatives> group;  // group
    uint32_t min_repeat = 1;
    uint32_t max_repeat = 1;              // kUnbounded for * and +
    static constexpr uint32_t kUnbounded = UINT32_MAX;
};

struct Alternatives {
    std::vector<std::vector<Item>> sequences;
};

struct RuleText {
    std::string name;
    Place place;
    Alternatives body;
};

// Parses GBNF text; throws Error(PAGODA_ERR_INVALID_ARGUMENT) "grammar line:col: ..." for a
// syntax error or a rule defined twice.
std::vector<RuleText> parse(std::string_view text);

}  // namespace pagoda::grammar::syntax
