// A model's text read back as tool calls (tool_call_format.hpp names the families' syntax).
//
// The text is: content, then calls, then possibly more text. Content is what precedes the
// family's opener (for llama3_json, the whole text unless it begins with a call), with the
// whitespace before the opener dropped. A call counts when its JSON object is complete, names one
// of the request's tools and holds an object of arguments (or none: {}). At the first call that
// does not count (unknown name, bad JSON, missing closer), and at text after the calls, reading
// stops: the text from there is content again (when no call counted, the whole text is content,
// as vLLM leaves it). A scan of a prefix of the text never contradicts a scan of the whole: what
// it calls content and the calls it finds stay so, which is what lets a stream send them early.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call_format.hpp"

namespace pagoda::server {

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // JSON text as Python's json.dumps writes it (", " and ": ")
};

struct ToolCallScan {
    size_t content_end = 0;  // text[0, content_end) is content
    std::vector<ParsedToolCall> calls;
    size_t rest = 0;               // where the text after content and calls begins
    bool rest_is_content = false;  // text[rest, end) is content; false: not decided yet (or none)
};

struct ToolCallSyntax {
    ToolCallFamily family = ToolCallFamily::none;
    const std::vector<std::string> *names = nullptr;  // the request's tools
    // A grammar forced the output to be calls: they start at once, and the openers may be
    // missing (a grammar leaves out markers the vocabulary has only as special tokens).
    bool forced = false;
};

// Scans `text`. `final`: the text is complete (a call cut short is no call, a partial opener no
// opener); otherwise the end may still grow into a call, and that part is left undecided.
ToolCallScan scan_tool_calls(const ToolCallSyntax &syntax, std::string_view text, bool final);

}  // namespace pagoda::server
