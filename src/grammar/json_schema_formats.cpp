// The string formats as grammar text. Each is written for the exact text and keeps to ASCII
// characters a JSON string holds raw.
#include "grammar/json_schema_formats.hpp"

namespace pagoda::grammar {
namespace {

// Calendar dates only: 30 days hath September, and February 29 in leap years alone (divisible
// by 4; by 400 when it ends a century), as validators that parse the date check.
const char *const kDate =
    "([0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
    "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
    "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) | "
    "([0-9] [0-9] (\"0\" [48] | [2468] [048] | [13579] [26]) | "
    "(\"0\" [48] | [2468] [048] | [13579] [26]) \"00\") \"-02-29\")";

// Seconds up to 59: RFC 3339's leap second (60) is valid only at 23:59 UTC, which validators
// check after the offset; leaving it out keeps every time written valid.
const char *const kTime =
    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] "
    "(\".\" [0-9]+)? (\"Z\" | [+\\-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";

const char *const kUuid =
    "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
    "[0-9a-fA-F]{12}";

// RFC 5322 atext: letters, digits and !#$%&'*+-/=?^_`{|}~ (escaped where a class needs it).
const char *const kEmail =
    "[A-Za-z0-9!#$%&'*+/=?\\^_\\x60{|}~\\-]+ (\".\" [A-Za-z0-9!#$%&'*+/=?\\^_\\x60{|}~\\-]+)* "
    "\"@\" [A-Za-z0-9] ([A-Za-z0-9\\-]* [A-Za-z0-9])? "
    "(\".\" [A-Za-z0-9] ([A-Za-z0-9\\-]* [A-Za-z0-9])?)+";

const char *const kIpv4Octet = "(\"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | "
                               "[1-9] [0-9] | [0-9])";

}  // namespace

std::optional<std::string> string_format_gbnf(std::string_view format) {
    if (format == "date") return std::string(kDate);
    if (format == "time") return std::string(kTime);
    if (format == "date-time") return "(" + std::string(kDate) + ") \"T\" (" + kTime + ")";
    if (format == "uuid") return std::string(kUuid);
    if (format == "email") return std::string(kEmail);
    if (format == "ipv4") {
        const std::string octet = kIpv4Octet;
        return octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet;
    }
    return std::nullopt;
}

}  // namespace pagoda::grammar
