// The ways chat templates have models write tool calls, as the server reads and forces them.
// A family is told from the model's chat template text, which spells the calls it renders:
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one block per call
//                (Hermes 2 Pro, Qwen 2.5, Qwen 3, MiniCPM); the template names "<tool_call>"
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] (Mistral Nemo, Small, ...;
//                call ids are 9 letters and digits); the template names "[TOOL_CALLS]"
//   llama3_json  {"name": "f", "parameters": {...}} as the whole answer, optionally after
//                <|python_tag|>, calls separated by "; " (Llama 3.1, 3.2, 3.3); the template names
//                <|python_tag|>, or "parameters" beside tool_calls
// Calls outside these families are not read: such a model's requests with tools are refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::server {

enum class ToolCallFamily : uint8_t { none, hermes, mistral, llama3_json };

// "hermes", "mistral", "llama3_json" or "none".
const char *tool_call_family_name(ToolCallFamily family);

// The family whose calls `template_source` renders; none when it renders none of these.
ToolCallFamily detect_tool_call_family(std::string_view template_source);

// What opens and closes a call (or the list of calls) in the model's text; "" where the family
// has none. Real models have the openers as special tokens (then the server keeps special
// tokens' text in the output, so the parser sees them).
struct ToolCallMarkers {
    std::string_view start;  // <tool_call>, [TOOL_CALLS], <|python_tag|> (optional for llama)
    std::string_view end;    // </tool_call> after each call (hermes)
    std::string_view arguments_key;  // the member holding the arguments
};
ToolCallMarkers tool_call_markers(ToolCallFamily family);

// A fresh call id: "call_" and 24 random letters and digits; for mistral, whose templates check
// ids when the calls come back, 9 random letters and digits.
std::string new_tool_call_id(ToolCallFamily family);

}  // namespace pagoda::server
