// The output constraint a request asks for, in OpenAI's words (response_format: text,
// json_object, json_schema) and vLLM's (guided_json, guided_regex, guided_grammar,
// guided_choice, and the newer structured_outputs object). At most one per request; each is
// compiled here (the grammar room, no vocabulary needed) so that a 400 names the field and the
// construct at fault before anything is queued. The engine compiles it against the vocabulary.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "server/request_parse.hpp"

namespace pagoda::server {

// Fills r.constraint_kind, constraint_text and constraint_field; throws ApiError(400) naming the
// field for a malformed one, two at once, or one that does not compile.
void parse_structured_output(const nlohmann::json &body, GenerationRequest &r);

// The schema's text again, from the body as the client wrote it: nlohmann::json sorts object
// keys, and the output's properties follow the schema's order. No-op without a JSON Schema.
void keep_schema_order(std::string_view raw_body, GenerationRequest &r);

}  // namespace pagoda::server
