// An embedding vector as /v1/embeddings writes it: a JSON array of numbers, each the shortest
// decimal that reads back as the same f32, or OpenAI's base64 of the little-endian f32 bytes.
#pragma once

#include <span>
#include <string>

namespace pagoda::server {

// "[0.1,-2.5e-05,...]"; every value must be finite (JSON has no NaN or infinity).
std::string embedding_json_array(std::span<const float> values);

// Base64 (RFC 4648, with padding) of the values as little-endian IEEE-754 f32 bytes.
std::string embedding_base64(std::span<const float> values);

}  // namespace pagoda::server
