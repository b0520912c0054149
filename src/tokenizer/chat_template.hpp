// Chat templates: the Jinja program in a model's tokenizer_config.json ("chat_template") or GGUF
// metadata ("tokenizer.chat_template") that turns an OpenAI-style messages array into the prompt
// text, rendered exactly as Hugging Face transformers' apply_chat_template renders it (jinja2
// with trim_blocks, lstrip_blocks and loop controls; globals raise_exception and strftime_now;
// tojson = json.dumps(ensure_ascii=False); Python semantics throughout).
//
// Use from the HTTP server (parse once per model, render per request, from any thread). Parse the
// request body as nlohmann::ordered_json: templates print tool schemas with tojson, and Python
// keeps a dict's key order, so a sorted std::map-backed json would print them differently.
//
//     const auto &set = tokenizer->chat_templates();   // null or no sources(): the model has none
//     const nlohmann::ordered_json *tools = request.contains("tools") ? &request["tools"] : nullptr;
//     try {
//         const tok::ChatTemplate &tmpl = set->get("", tools != nullptr);  // parsed once, cached
//         tok::ChatRenderOptions o;
//         o.add_generation_prompt = true;
//         o.tools = tools;
//         std::string prompt = tok::render_chat(tmpl, request["messages"], o, set->special_tokens);
//     } catch (const tok::ChatTemplateError &e) {
//         // Raised (the template's raise_exception) and Input (bad messages): HTTP 400 with
//         // e.template_message() / e.what(); Render: 400 too (the messages broke the template);
//         // Syntax, Unsupported, NoTemplate: the model's template cannot serve chat (500 or 400).
//     }
//
// Everything here throws ChatTemplateError (a pagoda::Error) and nothing else but bad_alloc.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja_error.hpp"

namespace pagoda::tok {

namespace jinja {
struct Stmt;
}

// Bounds on one render, so a hostile template cannot run away (real templates stay far below).
struct ChatRenderLimits {
    size_t max_output_bytes = size_t(64) << 20;  // the output and any string built on the way
    uint64_t max_steps = 20'000'000;              // statements, loop iterations
};

// One parsed template. Immutable: render() is safe from many threads at once.
class ChatTemplate {
public:
    // Parses `source`. Throws ChatTemplateError: Syntax for malformed Jinja, Unsupported for
    // constructs outside the subset (the message names the tag, filter or test and its line).
    explicit ChatTemplate(std::string_view source);
    ~ChatTemplate();
    ChatTemplate(ChatTemplate &&) noexcept;
    ChatTemplate &operator=(ChatTemplate &&) noexcept;

    // Renders with `context`'s members as the template's variables (a JSON object; objects keep
    // their key order, as Python dicts do). `now` is strftime_now's clock (null: the system
    // clock; times are shown in the process's local time zone, as Python's datetime.now()).
    std::string render(const nlohmann::ordered_json &context,
                       const std::function<std::chrono::system_clock::time_point()> &now = nullptr,
                       const ChatRenderLimits &limits = ChatRenderLimits()) const;

private:
    std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body_;
};

// What render_chat adds to the messages.
struct ChatRenderOptions {
    bool add_generation_prompt = false;
    const nlohmann::ordered_json *tools = nullptr;          // a JSON array, or null: tools=None
    const nlohmann::ordered_json *extra_context = nullptr;  // an object: more variables
                                                            // (enable_thinking, documents, ...)
    std::function<std::chrono::system_clock::time_point()> now;  // strftime_now's clock
    ChatRenderLimits limits;
};

// Renders `messages` (an OpenAI-style array of {"role": ..., "content": ...} objects; content a
// string, an array of parts, or null; other members such as tool_calls passed through) the way
// transformers does: variables messages, tools, documents (None unless extra_context sets it),
// add_generation_prompt, the tokenizer's special tokens (bos_token, eos_token, ...; only those it
// has), then extra_context. Throws ChatTemplateError: Input for messages or tools of the wrong
// shape (the message names the member), Raised when the template calls raise_exception, Render
// or Limit when rendering fails.
std::string render_chat(const ChatTemplate &tmpl, const nlohmann::ordered_json &messages,
                        const ChatRenderOptions &options, const nlohmann::ordered_json &special_tokens);

// The same with the messages as JSON text (the C API's entry); malformed JSON is an Input error.
std::string render_chat_text(const ChatTemplate &tmpl, std::string_view messages_json,
                             const ChatRenderOptions &options, const nlohmann::ordered_json &special_tokens);

// A tokenizer's chat templates: tokenizer_config.json's "chat_template" (a string, or a list of
// {"name", "template"}) or GGUF's tokenizer.chat_template (and tokenizer.chat_template.<name>),
// with the special tokens transformers would pass them. Templates are parsed on first use.
class ChatTemplateSet {
public:
    // `origin` names the file in messages.
    ChatTemplateSet(std::vector<std::pair<std::string, std::string>> named_sources,
                    nlohmann::ordered_json special_tokens, std::string origin);

    // The template called `name`; "" picks as transformers does: "tool_use" when `with_tools`
    // and the set has one, else "default" (a single unnamed template is "default"). Parsed once,
    // then shared. Throws ChatTemplateError: NoTemplate when there is no such template, or the
    // template's parse error.
    const ChatTemplate &get(const std::string &name, bool with_tools = false) const;

    const std::vector<std::pair<std::string, std::string>> &sources() const { return sources_; }
    // {"bos_token": "<s>", "eos_token": "</s>", ..., "additional_special_tokens": [...]}.
    const nlohmann::ordered_json special_tokens;
    const std::string origin;

private:
    struct Parsed {
        std::once_flag once;
        std::unique_ptr<ChatTemplate> tmpl;
        std::exception_ptr error;
    };
    std::vector<std::pair<std::string, std::string>> sources_;
    std::vector<std::unique_ptr<Parsed>> parsed_;  // one per source
};

// tokenizer_config.json's chat templates and special tokens (`config` is its parsed root); a set
// without sources when it has no chat_template (the special tokens still serve a template given
// at render time); null when `config` is not an object. Throws ChatTemplateError (Input) for a
// chat_template of another shape.
std::shared_ptr<const ChatTemplateSet> chat_templates_from_config(const nlohmann::ordered_json &config,
                                                                  const std::string &origin);

}  // namespace pagoda::tok
