#include "server/tool_call_stream.hpp"

#include <algorithm>

namespace pagoda::server {

ToolCallStream::ToolCallStream(const ToolRequest &tools)
    : syntax_{tools.family, &tools.names, tools.forced()}, family_(tools.family) {}

ToolCallStream::Delta ToolCallStream::push(std::string_view text, bool final) {
    text_.append(text);
    const ToolCallScan scan = scan_tool_calls(syntax_, text_, final);
    Delta d;
    // A scan of more text never takes back content or calls (tool_call_parser.hpp); the max()
    // keeps what was sent sent all the same.
    if (scan.content_end > head_sent_) {
        d.content.append(text_, head_sent_, scan.content_end - head_sent_);
        head_sent_ = scan.content_end;
    }
    for (; calls_ < scan.calls.size(); ++calls_) {
        const ParsedToolCall &c = scan.calls[calls_];
        d.tool_calls.push_back({{"index", calls_},
                                {"id", new_tool_call_id(family_)},
                                {"type", "function"},
                                {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    if (scan.rest_is_content) {
        const size_t from = std::max({scan.rest, tail_sent_, head_sent_});
        d.content.append(text_, from, text_.size() - from);
        tail_sent_ = text_.size();
    }
    return d;
}

nlohmann::json ToolCallStream::message(std::string_view text) {
    Delta d = push(text, true);
    nlohmann::json m = {{"role", "assistant"}, {"content", d.content}};
    if (!called()) return m;
    if (d.content.empty()) m["content"] = nullptr;
    for (nlohmann::json &c : d.tool_calls) c.erase("index");
    m["tool_calls"] = std::move(d.tool_calls);
    return m;
}

}  // namespace pagoda::server
