// A compiled PCRE2 pattern for the tokenizers' split and replace rules, with Unicode properties
// (\p{L}, \p{N}) and tolerance of invalid UTF-8 in the subject (such bytes never match a class).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::tok {

struct Span {
    size_t begin, end;  // bytes [begin, end)
};

class RegexPattern {
public:
    // Throws Error(PAGODA_ERR_FORMAT) naming `where` and the position when it does not compile.
    RegexPattern(const std::string &pattern, const std::string &where);

    // Non-overlapping matches left to right, empty matches left out. Safe from any thread.
    std::vector<Span> find_all(std::string_view subject) const;

private:
    struct Code;
    std::shared_ptr<const Code> code_;
};

}  // namespace pagoda::tok
