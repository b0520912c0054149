// libFuzzer target for the GBNF parser and the matcher behind every constraint: any text either
// parses to a grammar, whose matcher then reads a few texts derived from the input without
// crashing or running away (the live-stack bound turns runaway ambiguity into an Error), or
// fails with pagoda::Error. A crash, a sanitizer report, a hang or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_matcher.hpp"
#include "grammar/grammar.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    // The input is a grammar, then (after a NUL, if any) a text to match and to tokenize.
    const size_t split = input.find('\0');
    const std::string_view text = input.substr(0, split);
    const std::string_view sample = split == std::string_view::npos ? "" : input.substr(split + 1);
    try {
        const pagoda::grammar::Grammar grammar = pagoda::grammar::parse_gbnf(text);
        pagoda::grammar::matches_fully(grammar, sample);
        // A vocabulary of the sample's pieces: a walk of masks and accepts over it.
        std::vector<std::string> tokens = {""};
        for (size_t i = 0; i < sample.size(); i += 3) tokens.emplace_back(sample.substr(i, 1 + i % 4));
        for (int c = 0x20; c < 0x7f; ++c) tokens.emplace_back(1, char(c));
        auto vocabulary = std::make_shared<const pagoda::grammar::TokenVocabulary>(
            tokens, std::vector<int32_t>{0}, int32_t(tokens.size()));
        auto compiled = std::make_shared<const pagoda::grammar::CompiledConstraint>(grammar, vocabulary);
        pagoda::grammar::ConstraintMatcher matcher(compiled);
        for (int step = 0; step < 16 && !matcher.finished(); ++step) {
            const pagoda::grammar::TokenMask &mask = matcher.allowed();
            int32_t pick = -1;
            for (int32_t id = 0; id < mask.size(); ++id)
                if (mask.test(id) && (pick < 0 || (id * 31 + step) % 7 == 0)) pick = id;
            if (pick < 0) break;
            if (!matcher.accept(pick)) __builtin_trap();  // an allowed token must be taken
        }
    } catch (const pagoda::Error &) {
        // The expected way to reject a grammar (or a runaway-ambiguous parse).
    }
    return 0;
}
