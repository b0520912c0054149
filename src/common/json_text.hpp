// JSON files read across the core (config.json, safetensors headers, tokenizer.json): parsing
// that fails only with pagoda::Error, and how messages name a value's type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pagoda {

// Parses `text`; throws Error(PAGODA_ERR_FORMAT) naming `source` and the byte (counted from
// `first_byte`, where the text starts in its file) for malformed JSON, and for numbers too large
// for a double, which nlohmann reports with an exception of another kind.
nlohmann::json parse_json_text(std::string_view text, const std::string &source,
                               uint64_t first_byte = 0);

// "an array", "a string", "an integer", ...
std::string json_type_phrase(const nlohmann::json &value);

}  // namespace pagoda
