#include "server/tool_call_format.hpp"

#include <random>

namespace pagoda::server {

const char *tool_call_family_name(ToolCallFamily family) {
    switch (family) {
    case ToolCallFamily::hermes: return "hermes";
    case ToolCallFamily::mistral: return "mistral";
    case ToolCallFamily::llama3_json: return "llama3_json";
    case ToolCallFamily::none: break;
    }
    return "none";
}

ToolCallFamily detect_tool_call_family(std::string_view source) {
    auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
    // Mistral's templates name no <tool_call>; Hermes-style ones no [TOOL_CALLS]: the order
    // only matters for a template that names both, which renders Mistral's.
    if (has("[TOOL_CALLS]")) return ToolCallFamily::mistral;
    if (has("<tool_call>")) return ToolCallFamily::hermes;
    // Llama 3.2's template writes calls as {"name": ..., "parameters": ...} with no marker.
    if (has("<|python_tag|>") || (has("\"parameters\"") && has("tool_calls")))
        return ToolCallFamily::llama3_json;
    return ToolCallFamily::none;
}

ToolCallMarkers tool_call_markers(ToolCallFamily family) {
    switch (family) {
    case ToolCallFamily::hermes: return {"<tool_call>", "</tool_call>", "arguments"};
    case ToolCallFamily::mistral: return {"[TOOL_CALLS]", "", "arguments"};
    case ToolCallFamily::llama3_json: return {"<|python_tag|>", "", "parameters"};
    case ToolCallFamily::none: break;
    }
    return {"", "", "arguments"};
}

std::string new_tool_call_id(ToolCallFamily family) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // The server's loop thread makes every id; a thread_local engine keeps this safe anyway.
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<size_t> pick(0, sizeof kAlphabet - 2);
    const bool mistral = family == ToolCallFamily::mistral;
    std::string id = mistral ? "" : "call_";
    for (int i = 0, n = mistral ? 9 : 24; i < n; ++i) id += kAlphabet[pick(rng)];
    return id;
}

}  // namespace pagoda::server
