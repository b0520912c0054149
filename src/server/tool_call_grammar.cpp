#include "server/tool_call_grammar.hpp"

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/json_schema_to_gbnf.hpp"
#include "server/api_error.hpp"

namespace pagoda::server {

using ojson = nlohmann::ordered_json;

std::string tool_call_grammar(const ToolRequest &tools, MarkerText markers) {
    const ToolCallMarkers m = tool_call_markers(tools.family);
    std::string alternatives, schemas;
    for (size_t i = 0; i < tools.tools.size(); ++i) {
        if (tools.choice == ToolChoice::named && tools.names[i] != tools.named) continue;
        const ojson &f = tools.tools[i]["function"];
        const ojson any_object = {{"type", "object"}, {"additionalProperties", true}};
        const ojson &parameters =
            f.contains("parameters") && !f["parameters"].is_null() ? f["parameters"] : any_object;
        // Rule names: ours are root, call, call-*; each schema's start argsN and the rest toolN-*.
        const std::string start = "args" + std::to_string(i);
        try {
            schemas +=
                grammar::json_schema_rules(parameters, start, "tool" + std::to_string(i) + "-");
        } catch (const Error &e) {
            const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
            throw ApiError(400, param + ": a forced call cannot follow this schema: " + e.what(),
                           param, "unsupported_value");
        }
        // Names are letters, digits, '_' and '-' (tool_request.cpp): no JSON escapes.
        const std::string head =
            "\"" + tools.names[i] + "\", \"" + std::string(m.arguments_key) + "\": ";
        alternatives +=
            (alternatives.empty() ? "" : " | ") + grammar::gbnf_literal(head) + " " + start;
    }
    const std::string call = "call-object ::= " + grammar::gbnf_literal("{\"name\": ") + " (" +
                             alternatives + ") " + grammar::gbnf_literal("}") + "\n";
    auto lit = [](std::string_view s) { return grammar::gbnf_literal(s); };
    // A named function is called once, as OpenAI does.
    const bool many = tools.parallel && tools.choice == ToolChoice::required;
    std::string root;
    switch (tools.family) {
    case ToolCallFamily::hermes: {
        std::string one = "call-object";
        if (markers.start) one = lit(std::string(m.start) + "\n") + " " + one;
        if (markers.end) one += " " + lit("\n" + std::string(m.end));
        root = "root ::= call" + (many ? " (" + lit("\n") + " call)*" : "") + "\n" +
               "call ::= " + one + "\n";
        break;
    }
    case ToolCallFamily::mistral:
        root = "root ::= " + (markers.start ? lit(m.start) + " " : "") + lit("[") + " call-object" +
               (many ? " (" + lit(", ") + " call-object)*" : "") + " " + lit("]") + "\n";
        break;
    default:
        root = "root ::= call-object" + (many ? " (" + lit("; ") + " call-object)*" : "") + "\n";
        break;
    }
    return root + call + schemas;
}

}  // namespace pagoda::server
