// Fill-in-the-middle, the completions' `suffix`: the model is shown the text before and after
// a gap and writes what goes in it, framed by marker tokens its vocabulary defines. No chat
// template defines them; code models' vocabularies do, under a few spellings, found here by
// their text (as llama.cpp falls back to when a GGUF names no FIM ids).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace pagoda::server {

struct FimTokens {
    const char *family;   // whose spelling matched, for messages
    int32_t prefix = -1;
    int32_t suffix = -1;
    int32_t middle = -1;  // -1: none (suffix-first order: the model writes after the prefix)
    bool suffix_first = false;
};

// The markers of the first spelling the vocabulary holds whole, or nothing.
std::optional<FimTokens> find_fim_tokens(const tok::Tokenizer &tokenizer);

// The spellings looked for, for a 400's message ("<|fim_prefix|>, <fim_prefix>, ...").
std::string fim_spellings();

// The prompt's ids: what the tokenizer adds at the start (BOS) when `add_special`, then the
// prefix and suffix framed by the markers. A prefix given as ids is taken as it is.
std::vector<int32_t> fim_prompt_ids(const tok::Tokenizer &tokenizer, const FimTokens &fim,
                                    const std::vector<int32_t> &prefix_ids, bool prefix_is_ids,
                                    const std::string &prefix, const std::string &suffix,
                                    bool add_special);

}  // namespace pagoda::server
