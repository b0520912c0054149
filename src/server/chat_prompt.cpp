#include "server/chat_prompt.hpp"

#include <string_view>

#include "server/api_error.hpp"
#include "server/served_model.hpp"
#include "tokenizer/chat_template.hpp"

namespace pagoda::server {

namespace {

// The checked messages with their members in the order clients write them (role first), as the
// template would see them under transformers: a template may print a message whole. A tool
// call's arguments go in as the JSON they hold (vLLM's json.loads before rendering), its keys
// in the client's order: templates print them with tojson.
nlohmann::ordered_json ordered_messages(const nlohmann::json &messages) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const nlohmann::json &m : messages) {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        // parse_message() left only string members, and tool_calls.
        for (const char *k : {"role", "content", "name", "tool_calls", "tool_call_id"}) {
            if (!m.contains(k)) continue;
            if (std::string_view(k) != "tool_calls") {
                o[k] = m[k].get<std::string>();
                continue;
            }
            nlohmann::ordered_json calls = nlohmann::ordered_json::array();
            for (const nlohmann::json &c : m[k]) {
                const nlohmann::json &f = c["function"];
                auto arguments = nlohmann::ordered_json::parse(f["arguments"].get<std::string>());
                calls.push_back({{"id", c["id"].get<std::string>()},
                                 {"type", "function"},
                                 {"function",
                                  {{"name", f["name"].get<std::string>()},
                                   {"arguments", std::move(arguments)}}}});
            }
            o[k] = std::move(calls);
        }
        out.push_back(std::move(o));
    }
    return out;
}

}  // namespace

std::string render_chat_prompt(const ServedModel &model, const nlohmann::json &messages,
                               bool add_generation_prompt, const nlohmann::ordered_json *tools) {
    const auto *templates = model.tokenizer ? model.tokenizer->chat_templates().get() : nullptr;
    if (templates == nullptr || templates->sources().empty())
        throw ApiError(400, "model '" + model.name + "' has no chat template: use /v1/completions with a prompt",
                       "messages", "chat_template_missing");
    try {
        tok::ChatRenderOptions o;
        o.add_generation_prompt = add_generation_prompt;
        o.tools = tools;
        // transformers picks the "tool_use" template of a set when tools are given.
        return tok::render_chat(templates->get("", tools != nullptr), ordered_messages(messages), o,
                                templates->special_tokens);
    } catch (const tok::ChatTemplateError &e) {
        switch (e.kind()) {
            case tok::ChatTemplateErrorKind::Raised:
                throw ApiError(400, e.template_message(), "messages", "chat_template_rejected");
            case tok::ChatTemplateErrorKind::Render:
            case tok::ChatTemplateErrorKind::Limit:
            case tok::ChatTemplateErrorKind::Input:
                throw ApiError(400, std::string("the chat template failed on these messages: ") + e.what(),
                               "messages", "chat_template_failed");
            case tok::ChatTemplateErrorKind::NoTemplate:
                throw ApiError(400, e.what(), "messages", "chat_template_missing");
            case tok::ChatTemplateErrorKind::Syntax:
            case tok::ChatTemplateErrorKind::Unsupported: break;
        }
        throw ApiError(500, std::string("the model's chat template cannot be rendered: ") + e.what(), {},
                       "chat_template_unsupported");
    }
}

}  // namespace pagoda::server
