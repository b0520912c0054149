// JSON bodies of /v1/embeddings → what the engine is asked (OpenAI's fields, plus vLLM's
// `normalize` and `add_special_tokens` and Pagoda's `pooling`). Every field is checked here;
// anything that cannot be honoured is refused with 400 naming the field. A pure function of the
// body and the model's sizes, so tests drive it directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"

namespace pagoda::server {

// One input: a text, or token ids (when `is_ids`).
struct EmbeddingInput {
    bool is_ids = false;
    std::string text;
    std::vector<int32_t> ids;
};

struct EmbeddingRequest {
    std::vector<EmbeddingInput> inputs;  // at least one
    bool base64 = false;                 // encoding_format "base64": little-endian f32 bytes
    int32_t pooling = PAGODA_POOLING_MODEL;
    int32_t normalize = PAGODA_EMBEDDING_NORMALIZE_MODEL;
    bool add_special_tokens = true;      // BOS (or the template's tokens) on text inputs
};

// What checking a body needs to know of the model it names.
struct EmbeddingLimits {
    int64_t vocab_size = 0;      // ids must lie in [0, vocab_size)
    int64_t context_length = 0;  // an input of token ids may not be longer
    int64_t dimensions = 0;      // the model's hidden size: the only `dimensions` served
};

// Throws ApiError(400, ..., param) for anything wrong.
EmbeddingRequest parse_embedding_request(const nlohmann::json &body, const EmbeddingLimits &limits);

}  // namespace pagoda::server
