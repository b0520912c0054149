// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json) as the vocabulary a GGUF file
// carries, the way llama.cpp's convert_hf_to_gguf.py writes it: "llama" for SentencePiece-style
// BPE (byte fallback, "▁" for spaces), "gpt2" for byte-level BPE with tokenizer.ggml.pre naming the
// split rule. Only what a GGUF reader rebuilds to the same ids is converted: the result is checked
// by encoding sample texts both ways (Tokenizer::from_file and Tokenizer::from_gguf).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/gguf_vocabulary.hpp"

namespace pagoda::tok {

// The tokenizer of Hugging Face folder `folder` for a model of `vocab_size` embedding rows: ids
// no token has become "[PAD<id>]" tokens of type unused, as llama.cpp pads them. `config_bos` and
// `config_eos` (config.json's ids, -1 for none) stand in where tokenizer_config.json names no BOS
// or EOS token, as llama.cpp's converter falls back to them.
// Throws Error: NOT_FOUND (no tokenizer.json), FORMAT (malformed files, more tokens than
// `vocab_size`), UNSUPPORTED naming the file and the field GGUF cannot represent (another model
// type, a normalizer or pre-tokenizer llama.cpp has no name for, added tokens that strip spaces,
// a post-processor adding more than BOS and EOS, or sample texts that encode differently).
GgufVocabulary gguf_vocabulary_from_hf(const std::string &folder, int64_t vocab_size, int32_t config_bos,
                                       int32_t config_eos);

}  // namespace pagoda::tok
