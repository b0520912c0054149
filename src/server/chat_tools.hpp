// The seam between the chat endpoint and tool calling: a request's tools readied for the model
// that serves it, before its prompt is rendered.
#pragma once

#include <string>

#include "server/request_parse.hpp"

namespace pagoda::server {

struct ServedModel;

// The tools in the client's key order (from `body_text`, the request body), the family the
// model's chat template writes calls in, and for a forced call the grammar that makes the model
// write one. Throws ApiError 400 naming tool_choice when calls are asked of a model whose
// template writes none this server reads, and naming a tool's parameters when its schema cannot
// be compiled. A model without a chat template is left to render_chat_prompt(), which says so.
void prepare_chat_tools(const ServedModel &model, GenerationRequest &request,
                        const std::string &body_text);

}  // namespace pagoda::server
