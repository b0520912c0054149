#include "server/fill_in_middle.hpp"

#include "pagoda/tokenizer.h"

namespace pagoda::server {

namespace {

struct Spelling {
    const char *family;
    const char *prefix, *suffix, *middle;  // middle NULL: suffix first
};

// Prefix-suffix-middle order unless noted.
constexpr Spelling kSpellings[] = {
    {"Qwen2.5-Coder/CodeGemma", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
    {"StarCoder", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
    {"DeepSeek-Coder", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
     "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>"},
    {"Code Llama", "\xe2\x96\x81<PRE>", "\xe2\x96\x81<SUF>", "\xe2\x96\x81<MID>"},
    {"Codestral", "[PREFIX]", "[SUFFIX]", nullptr},  // [SUFFIX] suffix [PREFIX] prefix
};

// The one id the vocabulary holds for exactly this text, or -1.
int32_t whole_token(const tok::Tokenizer &t, const char *text) {
    std::vector<int32_t> ids;
    try {
        ids = t.encode(text, PAGODA_TOKENIZE_PARSE_SPECIAL);
    } catch (...) {
        return -1;
    }
    if (ids.size() != 1) return -1;
    try {
        return t.token_to_piece(ids[0]) == text ? ids[0] : -1;
    } catch (...) {
        return -1;
    }
}

void append(std::vector<int32_t> &to, const std::vector<int32_t> &more) {
    to.insert(to.end(), more.begin(), more.end());
}

}  // namespace

std::optional<FimTokens> find_fim_tokens(const tok::Tokenizer &t) {
    for (const Spelling &s : kSpellings) {
        FimTokens f;
        f.family = s.family;
        f.prefix = whole_token(t, s.prefix);
        f.suffix = whole_token(t, s.suffix);
        f.suffix_first = s.middle == nullptr;
        if (!f.suffix_first) f.middle = whole_token(t, s.middle);
        if (f.prefix >= 0 && f.suffix >= 0 && (f.suffix_first || f.middle >= 0)) return f;
    }
    return std::nullopt;
}

std::string fim_spellings() {
    std::string out;
    for (const Spelling &s : kSpellings) out += std::string(out.empty() ? "" : ", ") + s.prefix + " (" + s.family + ")";
    return out;
}

std::vector<int32_t> fim_prompt_ids(const tok::Tokenizer &t, const FimTokens &fim,
                                    const std::vector<int32_t> &prefix_ids, bool prefix_is_ids,
                                    const std::string &prefix, const std::string &suffix,
                                    bool add_special) {
    // Only the framing is special: markers typed in the code are text, as llama.cpp's infill.
    std::vector<int32_t> before = prefix_is_ids ? prefix_ids : t.encode(prefix, 0);
    std::vector<int32_t> after = t.encode(suffix, 0);
    std::vector<int32_t> ids;
    if (add_special && !prefix_is_ids) ids = t.encode("", PAGODA_TOKENIZE_ADD_SPECIAL);
    if (fim.suffix_first) {
        ids.push_back(fim.suffix);
        append(ids, after);
        ids.push_back(fim.prefix);
        append(ids, before);
    } else {
        ids.push_back(fim.prefix);
        append(ids, before);
        ids.push_back(fim.suffix);
        append(ids, after);
        ids.push_back(fim.middle);
    }
    return ids;
}

}  // namespace pagoda::server
