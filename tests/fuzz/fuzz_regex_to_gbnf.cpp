// libFuzzer target for regex_to_gbnf: any pattern either compiles to GBNF that parse_gbnf
// accepts, in each scope and text form, or fails with pagoda::Error. A crash, a hang, a sanitizer
// report, another exception, or a compiled grammar the parser refuses is a bug. The first byte
// picks the scope and the text form; the rest is the pattern.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/regex_to_gbnf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    using pagoda::grammar::RegexScope;
    using pagoda::grammar::RegexText;
    const RegexScope scope = data[0] & 1 ? RegexScope::search : RegexScope::whole;
    const RegexText text = data[0] & 2 ? RegexText::json_string_content : RegexText::raw;
    const std::string_view pattern(reinterpret_cast<const char *>(data + 1), size - 1);
    std::string gbnf;
    try {
        gbnf = "root ::= " +
               pagoda::grammar::regex_to_gbnf_expression(pattern, scope, text) + "\n";
    } catch (const pagoda::Error &) {
        return 0;  // the expected way to refuse a pattern
    }
    try {
        const pagoda::grammar::Grammar g = pagoda::grammar::parse_gbnf(gbnf);
        // A whole-match pattern with no metacharacters matches itself.
        if (scope == RegexScope::whole && text == RegexText::raw &&
            pattern.find_first_of("\\^$.|?*+()[]{}") == std::string_view::npos &&
            !pagoda::grammar::matches_fully(g, pattern))
            __builtin_trap();
    } catch (const pagoda::Error &) {
        __builtin_trap();  // the compiler wrote a grammar the parser refuses
    }
    return 0;
}
