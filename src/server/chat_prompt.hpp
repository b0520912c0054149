// The seam between the chat endpoint and the chat-template renderer (src/tokenizer/
// chat_template*, on its own branch): checked messages in, the prompt text the model's template
// gives out. Until the renderer is wired here it refuses with 501.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagoda::server {

struct ServedModel;

// `messages`: an array of {"role", "content": string, "name"?, "tool_call_id"?} as
// parse_chat_request() left them. Throws ApiError (501 while no renderer exists; 400 for
// messages the template rejects).
std::string render_chat_prompt(const ServedModel &model, const nlohmann::json &messages,
                               bool add_generation_prompt);

}  // namespace pagoda::server
