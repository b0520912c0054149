#include "tokenizer/regex_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/error.hpp"

namespace pagoda::tok {

struct RegexPattern::Code {
    pcre2_code *code = nullptr;
    ~Code() { pcre2_code_free(code); }
};

namespace {

struct MatchData {
    pcre2_match_data *data;
    explicit MatchData(const pcre2_code *code)
        : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (data == nullptr) throw std::bad_alloc();
    }
    ~MatchData() { pcre2_match_data_free(data); }
    MatchData(const MatchData &) = delete;
    MatchData &operator=(const MatchData &) = delete;
};

}  // namespace

RegexPattern::RegexPattern(const std::string &pattern, const std::string &where) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // UCP: \s, \d, \w and POSIX classes follow Unicode properties, as in Oniguruma.
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
    // tokenizer.json patterns are written for Oniguruma (Rust tokenizers); the ones models ship
    // (GPT-2, Llama 3, Qwen2, ...) read the same in PCRE2.
    const std::string &translated = pattern;
    auto code = std::make_shared<Code>();
    code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                               options, &error_code, &error_offset, nullptr);
    if (code->code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof message);
        throw Error(PAGODA_ERR_FORMAT, where + ": regex pattern does not compile at offset " +
                                           std::to_string(error_offset) + ": " +
                                           reinterpret_cast<const char *>(message) + " (pattern " +
                                           pattern + ")");
    }
    // JIT is an optimization only: without it (no JIT support) matching still works.
    pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
    code_ = std::move(code);
}

std::vector<Span> RegexPattern::find_all(std::string_view subject) const {
    std::vector<Span> matches;
    MatchData match(code_->code);
    const auto *text = reinterpret_cast<PCRE2_SPTR>(subject.data());
    size_t start = 0;
    while (start <= subject.size()) {
        const int rc = pcre2_match(code_->code, text, subject.size(), start, 0, match.data, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            throw Error(PAGODA_ERR_INTERNAL, std::string("regex match failed: ") +
                                                 reinterpret_cast<const char *>(message));
        }
        const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.data);
        const size_t begin = ovector[0], end = ovector[1];
        if (end > begin) {
            matches.push_back({begin, end});
            start = end;
        } else {
            // An empty match: step one code point on, so the search makes progress.
            start = begin + 1;
            while (start < subject.size() && (static_cast<unsigned char>(subject[start]) & 0xC0) == 0x80)
                ++start;
        }
    }
    return matches;
}

}  // namespace pagoda::tok
