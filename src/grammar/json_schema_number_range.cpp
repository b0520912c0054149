// Ranges of decimal numbers as grammar: the classic construction over digit strings. Numbers
// with fewer digits are smaller, so a range splits by digit count; within one count, two equal-
// length strings x <= y bound the strings whose first digit lies strictly between theirs (any
// rest), or equals x's (then the rest >= x's rest) or y's (the rest <= y's rest).
#include "grammar/json_schema_number_range.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::grammar {
namespace {

std::string join(const std::vector<std::string> &parts) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out;
}

// Parentheses when `e` has alternatives, so it can stand in a sequence.
std::string group(const std::string &e) {
    return e.find('|') == std::string::npos ? e : "(" + e + ")";
}

std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t count) {
    if (count == 0) return "";
    if (count == 1) return "[0-9]";
    return "[0-9]{" + std::to_string(count) + "}";
}

// The digit strings of x's length that lie in [x, y] (x <= y, equal lengths).
std::string same_length(const std::string &x, const std::string &y) {
    size_t common = 0;
    while (common < x.size() && x[common] == y[common]) ++common;
    if (common == x.size()) return "\"" + x + "\"";
    if (common > 0)
        return "\"" + x.substr(0, common) + "\" " +
               group(same_length(x.substr(common), y.substr(common)));
    const size_t rest = x.size() - 1;
    if (rest == 0) return digit_class(x[0], y[0]);
    const bool x_rest_lowest = x.find_first_not_of('0', 1) == std::string::npos;
    const bool y_rest_highest = y.find_first_not_of('9', 1) == std::string::npos;
    const char first_free = x_rest_lowest ? x[0] : char(x[0] + 1);
    const char last_free = y_rest_highest ? y[0] : char(y[0] - 1);
    std::vector<std::string> parts;
    if (!x_rest_lowest)
        parts.push_back(std::string("\"") + x[0] + "\" " +
                        group(same_length(x.substr(1), std::string(rest, '9'))));
    if (first_free <= last_free) parts.push_back(digit_class(first_free, last_free) + " " +
                                                 any_digits(rest));
    if (!y_rest_highest)
        parts.push_back(std::string("\"") + y[0] + "\" " +
                        group(same_length(std::string(rest, '0'), y.substr(1))));
    return join(parts);
}

uint64_t power_of_ten(size_t exponent) {
    uint64_t p = 1;
    for (size_t i = 0; i < exponent; ++i) p *= 10;
    return p;
}

// No upper end (bounds stay far below it).
constexpr uint64_t kUnbounded = UINT64_MAX;

// The naturals in [a, b] (b kUnbounded: no end), written without leading zeros.
std::string natural_range(uint64_t a, uint64_t b) {
    const bool bounded = b != kUnbounded;
    const size_t a_digits = std::to_string(a).size();
    const size_t b_digits = bounded ? std::to_string(b).size() : a_digits;
    std::vector<std::string> parts;
    for (size_t d = a_digits; d <= b_digits; ++d) {
        const uint64_t lo = d == a_digits ? a : power_of_ten(d - 1);
        const uint64_t hi = bounded && d == b_digits ? b : power_of_ten(d) - 1;
        parts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
    }
    if (!bounded)  // every longer number
        parts.push_back("[1-9] " + (a_digits == 1 ? std::string("[0-9]+")
                                                  : "[0-9]{" + std::to_string(a_digits) + ",}"));
    return join(parts);
}

struct MagnitudeEnd {
    uint64_t value = 0;
    bool exclusive = false;
};

const char *const kAnyFraction = "(\".\" [0-9]+)?";
const char *const kZeroFraction = "(\".\" \"0\"+)?";
const char *const kNonZeroFraction = "\".\" [0-9]* [1-9] [0-9]*";

// Decimals m = I.F (no sign) with low <= m <= high: with integer ends, whether m is in range
// depends on I, and on whether F is zero only where I equals an end.
std::optional<std::string> magnitude_range(MagnitudeEnd low, std::optional<MagnitudeEnd> high) {
    const uint64_t a = low.value;
    if (high && (high->value < a || (high->value == a && (low.exclusive || high->exclusive))))
        return std::nullopt;
    if (high && high->value == a) return group(natural_range(a, a)) + " " + kZeroFraction;
    std::vector<std::string> parts;
    parts.push_back(group(natural_range(a, a)) + " " +
                    (low.exclusive ? kNonZeroFraction : kAnyFraction));
    if (!high || high->value - 1 >= a + 1) {
        const uint64_t last = high ? high->value - 1 : kUnbounded;
        parts.push_back(group(natural_range(a + 1, last)) + " " + kAnyFraction);
    }
    if (high && !high->exclusive)
        parts.push_back(group(natural_range(high->value, high->value)) + " " + kZeroFraction);
    return join(parts);
}

uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t(-v) : uint64_t(v); }

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max) {
    std::vector<std::string> parts;
    if (!max || *max >= 0) {
        const uint64_t a = min && *min > 0 ? uint64_t(*min) : 0;
        parts.push_back(natural_range(a, max ? uint64_t(*max) : kUnbounded));
    }
    if (!min || *min < 0) {
        const uint64_t least = max && *max < 0 ? magnitude(*max) : 1;
        const uint64_t most = min ? magnitude(*min) : kUnbounded;
        parts.push_back("\"-\" " + group(natural_range(least, most)));
    }
    return join(parts);
}

std::optional<std::string> number_range_gbnf(std::optional<NumberBound> lower,
                                             std::optional<NumberBound> upper) {
    std::vector<std::string> parts;
    // x >= 0: the magnitude is x itself.
    if (!upper || upper->value >= 0) {
        MagnitudeEnd low;
        if (lower && lower->value >= 0) low = {uint64_t(lower->value), lower->exclusive};
        std::optional<MagnitudeEnd> high;
        if (upper) high = MagnitudeEnd{uint64_t(upper->value), upper->exclusive};
        if (std::optional<std::string> e = magnitude_range(low, high)) parts.push_back(*e);
    }
    // x < 0: the magnitude -x is above 0 (or above -upper) and at most -lower.
    if (!lower || lower->value < 0) {
        MagnitudeEnd low{0, true};
        if (upper && upper->value < 0) low = {magnitude(upper->value), upper->exclusive};
        std::optional<MagnitudeEnd> high;
        if (lower) high = MagnitudeEnd{magnitude(lower->value), lower->exclusive};
        if (std::optional<std::string> e = magnitude_range(low, high))
            parts.push_back("\"-\" " + group(*e));
    }
    if (parts.empty()) return std::nullopt;
    return join(parts);
}

}  // namespace pagoda::grammar
