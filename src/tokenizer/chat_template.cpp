#include "tokenizer/chat_template.hpp"

#include "tokenizer/jinja_eval.hpp"
#include "tokenizer/jinja_parser.hpp"

namespace pagoda::tok {

using nlohmann::ordered_json;

ChatTemplate::ChatTemplate(std::string_view source)
    : body_(std::make_shared<const jinja::Body>(jinja::parse_template(source))) {}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;
ChatTemplate &ChatTemplate::operator=(ChatTemplate &&) noexcept = default;

std::string ChatTemplate::render(const ordered_json &context,
                                 const std::function<std::chrono::system_clock::time_point()> &now,
                                 const ChatRenderLimits &limits) const {
    if (!context.is_object())
        throw ChatTemplateError(ChatTemplateErrorKind::Input, "chat template context must be a JSON object");
    // The globals (raise_exception, range, ...) never change and renders only read the scopes
    // above their own: one scope serves every render, on every thread.
    static const std::shared_ptr<jinja::Scope> globals = [] {
        auto g = std::make_shared<jinja::Scope>();
        for (auto &[name, fn] : jinja::global_functions()) g->set(name, std::move(fn));
        return g;
    }();
    auto variables = std::make_shared<jinja::Scope>(globals);
    for (const auto &[key, value] : context.items()) variables->set(key, jinja::from_json(value));
    jinja::Runtime rt;
    rt.now = now;
    rt.max_string_bytes = limits.max_output_bytes;
    rt.max_steps = limits.max_steps;
    return jinja::render(*body_, variables, rt);
}

namespace {

[[noreturn]] void bad_input(const std::string &message) {
    throw ChatTemplateError(ChatTemplateErrorKind::Input, message);
}

std::string phrase(const ordered_json &v) {
    switch (v.type()) {
    case ordered_json::value_t::object: return "an object";
    case ordered_json::value_t::array: return "an array";
    case ordered_json::value_t::string: return "a string";
    case ordered_json::value_t::boolean: return "a boolean";
    case ordered_json::value_t::null: return "null";
    default: return "a number";
    }
}

void check_messages(const ordered_json &messages) {
    if (!messages.is_array())
        bad_input("messages must be a JSON array of message objects, found " + phrase(messages));
    for (size_t i = 0; i < messages.size(); ++i) {
        const ordered_json &m = messages[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad_input(where + " must be an object with \"role\" and \"content\", found " + phrase(m));
        const auto role = m.find("role");
        if (role == m.end()) bad_input(where + " has no \"role\"");
        if (!role->is_string()) bad_input(where + ".role must be a string, found " + phrase(*role));
        const auto content = m.find("content");
        if (content != m.end() && !content->is_string() && !content->is_array() && !content->is_null())
            bad_input(where + ".content must be a string, an array of parts or null, found " + phrase(*content));
        if (content != m.end() && content->is_array())
            for (size_t p = 0; p < content->size(); ++p)
                if (!(*content)[p].is_object())
                    bad_input(where + ".content[" + std::to_string(p) + "] must be an object (a content part), found " +
                              phrase((*content)[p]));
        const auto tool_calls = m.find("tool_calls");
        if (tool_calls != m.end() && !tool_calls->is_array() && !tool_calls->is_null())
            bad_input(where + ".tool_calls must be an array, found " + phrase(*tool_calls));
    }
}

ordered_json parse_input(std::string_view text, const char *what) {
    try {
        return ordered_json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error &e) {
        bad_input(std::string(what) + " is not valid JSON (at byte " + std::to_string(e.byte) + "): " + e.what());
    } catch (const nlohmann::json::exception &e) {
        bad_input(std::string(what) + " is not valid JSON: " + e.what());
    }
}

}  // namespace

std::string render_chat(const ChatTemplate &tmpl, const ordered_json &messages, const ChatRenderOptions &options,
                        const ordered_json &special_tokens) {
    check_messages(messages);
    if (options.tools != nullptr && !options.tools->is_array() && !options.tools->is_null())
        bad_input("tools must be a JSON array, found " + phrase(*options.tools));
    if (options.extra_context != nullptr && !options.extra_context->is_object())
        bad_input("the extra context must be a JSON object, found " + phrase(*options.extra_context));
    // transformers: render(messages=, tools=, documents=, add_generation_prompt=,
    // **special_tokens_map, **kwargs); later keys win.
    ordered_json context = ordered_json::object();
    context["messages"] = messages;
    context["tools"] = options.tools != nullptr ? *options.tools : ordered_json(nullptr);
    context["documents"] = nullptr;
    context["add_generation_prompt"] = options.add_generation_prompt;
    if (special_tokens.is_object())
        for (const auto &[k, v] : special_tokens.items()) context[k] = v;
    if (options.extra_context != nullptr)
        for (const auto &[k, v] : options.extra_context->items()) context[k] = v;
    return tmpl.render(context, options.now, options.limits);
}

std::string render_chat_text(const ChatTemplate &tmpl, std::string_view messages_json,
                             const ChatRenderOptions &options, const ordered_json &special_tokens) {
    return render_chat(tmpl, parse_input(messages_json, "messages"), options, special_tokens);
}

ChatTemplateSet::ChatTemplateSet(std::vector<std::pair<std::string, std::string>> named_sources,
                                 ordered_json special_tokens_, std::string origin_)
    : special_tokens(std::move(special_tokens_)), origin(std::move(origin_)), sources_(std::move(named_sources)) {
    for (size_t i = 0; i < sources_.size(); ++i) parsed_.push_back(std::make_unique<Parsed>());
}

const ChatTemplate &ChatTemplateSet::get(const std::string &name, bool with_tools) const {
    auto index_of = [&](const std::string &n) -> long {
        for (size_t i = 0; i < sources_.size(); ++i)
            if (sources_[i].first == n) return long(i);
        return -1;
    };
    long index = -1;
    if (!name.empty()) {
        index = index_of(name);
        if (index < 0) {
            std::string names;
            for (const auto &s : sources_) names += (names.empty() ? "" : ", ") + s.first;
            throw ChatTemplateError(ChatTemplateErrorKind::NoTemplate,
                                    origin + " has no chat template named '" + name + "' (it has: " + names + ")");
        }
    } else {
        if (with_tools) index = index_of("tool_use");
        if (index < 0) index = index_of("default");
        if (index < 0)
            throw ChatTemplateError(ChatTemplateErrorKind::NoTemplate,
                                    sources_.empty() ? "the model has no chat template (" + origin + " has none)"
                                                     : origin + " has no default chat template");
    }
    Parsed &p = *parsed_[size_t(index)];
    std::call_once(p.once, [&] {
        try {
            p.tmpl = std::make_unique<ChatTemplate>(sources_[size_t(index)].second);
        } catch (...) {
            p.error = std::current_exception();
        }
    });
    if (p.error) std::rethrow_exception(p.error);
    return *p.tmpl;
}

namespace {

// transformers passes str(token): a string, or an AddedToken object's "content".
std::string token_text(const ordered_json &v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return {};
}

}  // namespace

std::shared_ptr<const ChatTemplateSet> chat_templates_from_config(const ordered_json &config,
                                                                  const std::string &origin) {
    if (!config.is_object()) return nullptr;
    const auto it = config.find("chat_template");
    std::vector<std::pair<std::string, std::string>> sources;
    if (it == config.end() || it->is_null()) {
        // No template: the set still carries the special tokens, for a template given at render.
    } else if (it->is_string()) {
        sources.emplace_back("default", it->get<std::string>());
    } else if (it->is_array()) {
        for (size_t i = 0; i < it->size(); ++i) {
            const ordered_json &e = (*it)[i];
            if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
                !e["template"].is_string())
                bad_input(origin + ": chat_template[" + std::to_string(i) +
                          "] must be an object with string \"name\" and \"template\"");
            sources.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
        }
    } else {
        bad_input(origin + ": chat_template must be a string or a list of {name, template}, found " + phrase(*it));
    }
    // special_tokens_map: only the tokens that are set (a falsy token is left out).
    ordered_json specials = ordered_json::object();
    for (const char *key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        const auto t = config.find(key);
        if (t == config.end()) continue;
        const std::string text = token_text(*t);
        if (!text.empty()) specials[key] = text;
    }
    const auto extra = config.find("additional_special_tokens");
    if (extra != config.end() && extra->is_array() && !extra->empty()) {
        ordered_json list = ordered_json::array();
        for (const auto &e : *extra) list.push_back(token_text(e));
        specials["additional_special_tokens"] = list;
    }
    return std::make_shared<ChatTemplateSet>(std::move(sources), std::move(specials), origin);
}

}  // namespace pagoda::tok
