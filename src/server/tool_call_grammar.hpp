// The grammar that forces a tool call (tool_choice "required" or a named function): the
// family's own layout around {"name": "<a tool>", "<arguments key>": <that tool's arguments>},
// each tool's arguments compiled from its `parameters` JSON Schema
// (grammar/json_schema_to_gbnf.hpp) under a rule prefix of its own. A named function, or "required" without parallel_tool_calls:
// exactly one call; "required" with it: one or more (the model chooses when to stop). A tool
// without parameters takes any JSON object.
//   hermes       "<tool_call>\n" call "\n</tool_call>" ("\n" the same)*
//   mistral      "[TOOL_CALLS][" call (", " call)* "]"
//   llama3_json  call ("; " call)*
//   call         "{\"name\": \"get_weather\", \"arguments\": " args0 "}" | ...
#pragma once

#include <string>

#include "server/tool_request.hpp"

namespace pagoda::server {

// Which of the family's markers the model can write as text. A marker that is a special token
// of the vocabulary is left out: a constraint allows text tokens only (tool_call_parser.hpp reads
// forced calls without them).
struct MarkerText {
    bool start = true;
    bool end = true;
};

// The GBNF for `tools` (its tools, choice and parallel_tool_calls; its family set). Throws
// ApiError 400 naming tools[i].function.parameters for a schema the compiler refuses.
std::string tool_call_grammar(const ToolRequest &tools, MarkerText markers);

}  // namespace pagoda::server
