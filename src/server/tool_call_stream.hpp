// One chat choice's text read for tool calls as it is generated (tool_call_parser.hpp says how
// text is read): what may be sent now as content, and the calls now complete, in OpenAI's shapes.
//
// A stream sends each call whole, once its JSON (and its closer) is complete, rather than its
// arguments piece by piece: a call is known to count only when it is complete (a known tool
// name, arguments that parse), and text that might still become a call is held back, so what is
// sent never has to be taken back and the streamed answer is the non-streamed one. Plain text
// before any call streams as it comes, but for the few characters that may begin an opener.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.hpp"
#include "server/tool_request.hpp"

namespace pagoda::server {

class ToolCallStream {
public:
    // `tools` must outlive the stream (the Generation's request holds both).
    explicit ToolCallStream(const ToolRequest &tools);

    struct Delta {
        std::string content;
        // delta.tool_calls entries: {"index", "id", "type": "function", "function": {"name",
        // "arguments"}}; empty when none completed.
        nlohmann::json tool_calls = nlohmann::json::array();
    };
    // Appends generated text; `final`: the choice's text is complete.
    Delta push(std::string_view text, bool final);
    // Whether any call was made (finish_reason "tool_calls").
    bool called() const { return calls_ > 0; }

    // A non-streamed answer's message from its whole text: {"role": "assistant", "content":
    // the text outside calls (null when there is none and calls were made), "tool_calls"?}.
    nlohmann::json message(std::string_view text);

private:
    ToolCallSyntax syntax_;
    ToolCallFamily family_;
    std::string text_;
    size_t head_sent_ = 0;  // text_[0, head_sent_) sent as content
    size_t tail_sent_ = 0;  // the content after the calls sent up to here (absolute)
    size_t calls_ = 0;      // calls sent
};

}  // namespace pagoda::server
