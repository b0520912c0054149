// A chat request's tools: OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`, checked
// with 400s naming the field. The legacy `functions` and `function_call` are refused by name
// (other than empty or "none"/"auto"): their answers have another shape (message.function_call),
// and clients that send them can send `tools`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_call_format.hpp"

namespace pagoda::server {

enum class ToolChoice : uint8_t {
    none,       // the model is not asked for calls; its text is the answer
    automatic,  // "auto": calls parsed out of the text when the model writes them
    required,   // at least one call (exactly one without parallel_tool_calls), forced by a grammar
    named,      // one call of the named function, forced by a grammar
};

struct ToolRequest {
    // The function tools as the client wrote them, [{"type": "function", "function": {...}}],
    // in its order and with its key order once keep_client_order() ran: the chat template's
    // `tools` and the grammar's property order come from here. Empty: no tools.
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();
    std::vector<std::string> names;  // tools[i].function.name
    ToolChoice choice = ToolChoice::none;
    std::string named;     // the function tool_choice names (ToolChoice::named)
    bool parallel = true;  // parallel_tool_calls

    // Set by prepare_chat_tools() (chat_tools.hpp) from the model's chat template.
    ToolCallFamily family = ToolCallFamily::none;
    std::string grammar;  // GBNF for a forced call; "" when the choice forces none

    bool parses_calls() const { return choice != ToolChoice::none; }
    bool forced() const { return choice == ToolChoice::required || choice == ToolChoice::named; }
};

// The tool fields of a chat body. `body` keeps the client's key order; the overload for the
// body as request_parse reads it (nlohmann::json sorts keys) checks the same and gives the
// tools in sorted key order, which keep_client_order() puts right.
ToolRequest parse_tool_request(const nlohmann::ordered_json &body);
ToolRequest parse_tool_request(const nlohmann::json &body);

// An assistant message's tool_calls (`where` names them in messages), checked: each
// {"id", "type": "function", "function": {"name", "arguments": JSON text}}. The arguments stay
// text here; the chat template gets the JSON they hold (chat_prompt.cpp), as vLLM gives it.
nlohmann::json checked_tool_calls(const nlohmann::json &calls, const std::string &where);

// Parses `body_text` again keeping key order (the template prints tools as it sees them, as
// transformers does with the client's dicts) and replaces `tools` with that form.
void keep_client_order(ToolRequest &tools, const std::string &body_text);

}  // namespace pagoda::server
