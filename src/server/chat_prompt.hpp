// The seam between the chat endpoint and the chat-template renderer (src/tokenizer/
// chat_template.hpp): checked messages in, the prompt text the model's template gives out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagoda::server {

struct ServedModel;

// `messages`: an array of {"role", "content": string, "name"?, "tool_calls"?, "tool_call_id"?}
// as parse_chat_request() left them; `tools`: the template's tools variable (null: None), the
// tools as the client sent them. Throws ApiError: 400 when the template rejects the
// conversation (its raise_exception message) or fails on it, 400 for a model without a chat
// template, 500 for a template the renderer cannot run (malformed, or Jinja outside the subset).
std::string render_chat_prompt(const ServedModel &model, const nlohmann::json &messages,
                               bool add_generation_prompt,
                               const nlohmann::ordered_json *tools = nullptr);

}  // namespace pagoda::server
