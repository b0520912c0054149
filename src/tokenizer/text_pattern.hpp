// What Split, Replace and their kin look for: tokenizer.json's {"String": ...} (a literal) or
// {"Regex": ...} (a PCRE2 pattern).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex_pattern.hpp"

namespace pagoda::tok {

class TextPattern {
public:
    static TextPattern literal(std::string text);
    // Throws Error(PAGODA_ERR_FORMAT) naming `where` when the pattern does not compile.
    static TextPattern regex(const std::string &pattern, const std::string &where);

    // Non-overlapping, non-empty matches, left to right.
    std::vector<Span> find_all(std::string_view text) const;
    // `text` with every match replaced by `content`.
    std::string replace_all(std::string_view text, std::string_view content) const;

private:
    std::string literal_;
    std::optional<RegexPattern> regex_;
};

}  // namespace pagoda::tok
