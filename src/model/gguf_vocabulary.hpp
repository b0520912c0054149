// The tokenizer a GGUF file carries (its `tokenizer.ggml.*` keys) read into a GgufVocabulary, the
// plain data tokenizer/gguf_vocabulary.hpp defines for the tokenizer to build from, and written back.
#pragma once

#include <cstdint>

#include "tokenizer/gguf_vocabulary.hpp"
#include "model/gguf_file.hpp"
#include "model/gguf_writer.hpp"

namespace pagoda::model {

// Reads the vocabulary; an empty one (no tokenizer.ggml.tokens) when the file has none. Throws
// Error(PAGODA_ERR_FORMAT) naming the key when scores or types disagree in length with the
// tokens, or a special token id lies outside the vocabulary.
GgufVocabulary read_gguf_vocabulary(const GgufFile &file);

// A special token id key (tokenizer.ggml.bos_token_id, ...): -1 when absent or 0xFFFFFFFF
// (converters write that for "none"); throws FORMAT naming the key when >= vocab_size.
int32_t gguf_special_token_id(const GgufFile &file, const char *key, size_t vocab_size);

// Sets the `tokenizer.*` keys that read_gguf_vocabulary reads back as `v`: absent parts (no
// scores, ids of -1, switches of -1) are left out, as llama.cpp's converter leaves them out.
void write_gguf_vocabulary(const GgufVocabulary &v, GgufMetadata &metadata);

}  // namespace pagoda::model
