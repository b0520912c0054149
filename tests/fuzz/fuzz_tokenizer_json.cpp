// libFuzzer target for tokenizer.json: any input must either give a tokenizer that encodes and
// decodes a few texts, or fail with pagoda::Error. A crash, a sanitizer report or another
// exception is a bug. The first line of the input, when it starts with '{', may be a
// tokenizer_config.json, so the fuzzer reaches that reader too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string_view text(reinterpret_cast<const char *>(data), size);
    std::string config;
    const std::string *config_ptr = nullptr;
    size_t newline = text.find('\n');
    if (!text.empty() && text[0] == '{' && newline != std::string_view::npos &&
        text.substr(0, newline).find("\"tokenizer_class\"") != std::string_view::npos) {
        config = std::string(text.substr(0, newline));
        config_ptr = &config;
        text = text.substr(newline + 1);
    }
    try {
        auto tok = pagoda::tok::Tokenizer::from_json_text(text, "tokenizer.json", config_ptr,
                                                          "tokenizer_config.json");
        for (const char *sample : {"Hello world", "  tabs\tand\nnewlines ", "日本語 ✓ 123", ""}) {
            auto ids = tok->encode(sample, PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL);
            for (int32_t id : ids)
                if (id < 0 || id >= tok->vocab_size()) __builtin_trap();
            (void)tok->decode(ids, 0);
            (void)tok->decode(ids, PAGODA_DETOKENIZE_SKIP_SPECIAL);
        }
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad file.
    }
    return 0;
}
