// pagoda_tokenizer_apply_chat_template (tokenizer.h): argument checks, the tokenizer's template
// (or the caller's), and the rendered text copied into memory the caller frees with pagoda_free.
#include <optional>

#include "capi/guard.hpp"
#include "capi/owned_text.hpp"
#include "capi/sized_struct.hpp"
#include "capi/tokenizer_handle.hpp"
#include "tokenizer/chat_template.hpp"

using nlohmann::ordered_json;
using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_chat_template_options_t default_chat_template_options() {
    pagoda_chat_template_options_t o{};
    o.struct_size = sizeof o;
    return o;
}

// A JSON option (tools_json, context_json) parsed, naming the option when it is not JSON.
ordered_json parse_option(const char *text, const char *what) {
    try {
        return ordered_json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        fail(PAGODA_ERR_INVALID_ARGUMENT, std::string("options->") + what + " is not valid JSON: " + e.what());
    }
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_chat_template_options_init(pagoda_chat_template_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_chat_template_options());
}

PAGODA_API pagoda_status_t pagoda_tokenizer_apply_chat_template(const pagoda_tokenizer_t *tokenizer,
                                                                const char *messages_json,
                                                                const pagoda_chat_template_options_t *options,
                                                                char **text, size_t *text_len) {
    return guarded("pagoda_tokenizer_apply_chat_template", [&] {
        const pagoda::tok::Tokenizer *t = &pagoda::require_tokenizer(tokenizer);
        if (messages_json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "messages_json is NULL");
        if (text == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "text is NULL");
        const pagoda_chat_template_options_t o =
            pagoda::read_sized(options, default_chat_template_options(), "options");

        ordered_json tools, context;
        pagoda::tok::ChatRenderOptions render;
        render.add_generation_prompt = o.add_generation_prompt != 0;
        if (o.tools_json != nullptr) {
            tools = parse_option(o.tools_json, "tools_json");
            render.tools = &tools;
        }
        if (o.context_json != nullptr) {
            context = parse_option(o.context_json, "context_json");
            render.extra_context = &context;
        }
        const auto &set = t->chat_templates();
        const ordered_json no_specials = ordered_json::object();
        const ordered_json &specials = set ? set->special_tokens : no_specials;
        std::optional<pagoda::tok::ChatTemplate> given;  // the caller's override, parsed per call
        const pagoda::tok::ChatTemplate *tmpl = nullptr;
        if (o.chat_template != nullptr) {
            tmpl = &given.emplace(o.chat_template);
        } else {
            if (!set || set->sources().empty())
                fail(PAGODA_ERR_UNSUPPORTED,
                     "the tokenizer has no chat template (no chat_template in tokenizer_config.json, no "
                     "tokenizer.chat_template in the GGUF file); pass one in options->chat_template");
            tmpl = &set->get(o.template_name ? o.template_name : "", o.tools_json != nullptr);
        }
        const std::string result = pagoda::tok::render_chat_text(*tmpl, messages_json, render, specials);
        *text = pagoda::owned_text(result);
        if (text_len != nullptr) *text_len = result.size();
        return PAGODA_OK;
    });
}

}  // extern "C"
