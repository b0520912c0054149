// vLLM's bad_words over HTTP: each word becomes the token sequences the sampler masks (the C
// API takes ids; the server tokenizes with the served model's tokenizer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/request_parse.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::server {

// Fills r.bad_words_token_ids and r.bad_words_lengths from r.bad_words as vLLM's
// SamplingParams.update_from_tokenizer does: each word, leading whitespace stripped, encoded
// without special tokens as it is and with one leading space; the spaced form is kept too when
// it starts with another token and has as many tokens (the word inside a sentence). The words
// are plain text: a special token's spelling is not parsed. Throws ApiError(400) naming
// bad_words when there are words but no tokenizer, or a word encodes to ids outside
// [0, vocab_size).
void tokenize_bad_words(const tok::Tokenizer *tokenizer, int64_t vocab_size, GenerationRequest &r);

}  // namespace pagoda::server
