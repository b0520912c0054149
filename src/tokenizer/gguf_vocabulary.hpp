// The tokenizer a GGUF file carries in its `tokenizer.ggml.*` keys, as plain data: tokenizer/
// builds from it (Tokenizer::from_gguf), model/ (above tokenizer/) reads it from a file and
// writes it back (model/gguf_vocabulary.hpp). Nothing here interprets the pieces.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pagoda {

struct GgufVocabulary {
    std::string model;                 // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE)
    std::string pre;                   // tokenizer.ggml.pre: the pre-tokenizer's name; "" if absent
    std::vector<std::string> tokens;   // piece of each id
    std::vector<float> scores;         // per id; empty when the file has none
    std::vector<int32_t> token_types;  // per id (1 normal, 2 unknown, 3 control, 6 byte, ...); may be empty
    std::vector<std::string> merges;   // "a b" pairs, BPE only; may be empty
    int32_t bos_token_id = -1;         // -1 = none
    int32_t eos_token_id = -1;
    int32_t unknown_token_id = -1;
    int32_t padding_token_id = -1;
    // Optional switches (1 true, 0 false, -1 absent: the tokenizer picks its model's default).
    int8_t add_bos_token = -1;     // tokenizer.ggml.add_bos_token
    int8_t add_eos_token = -1;     // tokenizer.ggml.add_eos_token
    int8_t add_space_prefix = -1;  // tokenizer.ggml.add_space_prefix (SentencePiece's dummy prefix)
    // tokenizer.chat_template as ("default", source), then tokenizer.chat_template.<name> as
    // (name, source); empty when the file has none.
    std::vector<std::pair<std::string, std::string>> chat_templates;
};

}  // namespace pagoda
