// GBNF for the JSON numbers within bounds: JSON Schema's minimum, maximum, exclusiveMinimum
// and exclusiveMaximum, compiled exactly by comparing decimal digits, so a model can only write
// numbers in range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pagoda::grammar {

// Bounds are kept to |value| <= kMaxNumberBound, well inside int64_t, so that negating one or
// stepping past it never overflows.
constexpr int64_t kMaxNumberBound = 1'000'000'000'000'000'000;

// A GBNF expression for the integers in [min, max] (either end may be open), as JSON writes them:
// no leading zeros, no "-0", no fraction or exponent. Requires min <= max when both are given.
std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max);

// One end of a number range: an integer value, included or not.
struct NumberBound {
    int64_t value = 0;
    bool exclusive = false;
};

// A GBNF expression for the JSON numbers between `lower` and `upper` (either may be open), written
// without an exponent (a fraction is allowed, "1.50" too). Empty when no number is in range.
std::optional<std::string> number_range_gbnf(std::optional<NumberBound> lower,
                                             std::optional<NumberBound> upper);

}  // namespace pagoda::grammar
