#include "tokenizer/text_pattern.hpp"

namespace pagoda::tok {

TextPattern TextPattern::literal(std::string text) {
    TextPattern p;
    p.literal_ = std::move(text);
    return p;
}

TextPattern TextPattern::regex(const std::string &pattern, const std::string &where) {
    TextPattern p;
    p.regex_.emplace(pattern, where);
    return p;
}

std::vector<Span> TextPattern::find_all(std::string_view text) const {
    if (regex_) return regex_->find_all(text);
    std::vector<Span> matches;
    if (literal_.empty()) return matches;
    for (size_t pos = text.find(literal_); pos != std::string_view::npos;
         pos = text.find(literal_, pos + literal_.size()))
        matches.push_back({pos, pos + literal_.size()});
    return matches;
}

std::string TextPattern::replace_all(std::string_view text, std::string_view content) const {
    std::string out;
    out.reserve(text.size());
    size_t done = 0;
    for (const Span &m : find_all(text)) {
        out.append(text.substr(done, m.begin - done));
        out.append(content);
        done = m.end;
    }
    out.append(text.substr(done));
    return out;
}

}  // namespace pagoda::tok
