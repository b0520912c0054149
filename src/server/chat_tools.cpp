#include "server/chat_tools.hpp"

#include "pagoda/tokenizer.h"
#include "server/api_error.hpp"
#include "server/served_model.hpp"
#include "server/tool_call_grammar.hpp"
#include "tokenizer/chat_template.hpp"

namespace pagoda::server {

namespace {

// The source of the template render_chat_prompt() will use: as ChatTemplateSet::get("", true)
// picks, "tool_use" when the set has one, else "default" (or the only one).
const std::string *template_source(const tok::ChatTemplateSet &set) {
    const auto &sources = set.sources();
    for (const char *name : {"tool_use", "default"})
        for (const auto &[n, source] : sources)
            if (n == name) return &source;
    return sources.size() == 1 ? &sources[0].second : nullptr;
}

// Whether the model writes `marker` as text: a special token's text the detokenizer drops
// (unless asked to keep it) and a constraint never allows.
bool writes_as_text(const tok::Tokenizer &t, std::string_view marker) {
    if (marker.empty()) return true;
    for (int32_t id : t.encode(marker, PAGODA_TOKENIZE_PARSE_SPECIAL))
        if (t.is_special(id)) return false;
    return true;
}

}  // namespace

void prepare_chat_tools(const ServedModel &model, GenerationRequest &request,
                        const std::string &body_text) {
    ToolRequest &tools = request.tools;
    keep_client_order(tools, body_text);
    const auto *templates = model.tokenizer ? model.tokenizer->chat_templates().get() : nullptr;
    if (!tools.parses_calls() || templates == nullptr || templates->sources().empty()) return;
    const std::string *source = template_source(*templates);
    tools.family = source ? detect_tool_call_family(*source) : ToolCallFamily::none;
    if (tools.family == ToolCallFamily::none)
        throw ApiError(400, "model '" + model.name + "': its chat template writes no tool calls "
                                "this server can read (Hermes <tool_call>, Mistral [TOOL_CALLS] "
                                "or Llama 3 JSON): send tool_choice \"none\" or no tools",
                       "tool_choice", "tool_calls_unsupported");
    const ToolCallMarkers m = tool_call_markers(tools.family);
    const MarkerText text{writes_as_text(*model.tokenizer, m.start),
                          writes_as_text(*model.tokenizer, m.end)};
    // As vLLM's Hermes and Mistral parsers ask: their openers are special tokens in real
    // vocabularies, which the parser must see. (A forced call's grammar leaves them out.)
    if (!text.start && tools.choice == ToolChoice::automatic &&
        tools.family != ToolCallFamily::llama3_json)
        request.options.flags |= PAGODA_REQUEST_KEEP_SPECIAL_TEXT;
    // (A response_format beside a forced call is refused at submit: generation.cpp.)
    if (tools.forced()) tools.grammar = tool_call_grammar(tools, text);
}

}  // namespace pagoda::server
