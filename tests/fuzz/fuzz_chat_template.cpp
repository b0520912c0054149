// libFuzzer target for chat templates: the input is a Jinja template, optionally followed by a NUL
// byte and a messages JSON array. Parsing and rendering (with small work limits) must either give
// text or fail with ChatTemplateError (a pagoda::Error); a crash, a sanitizer report, a hang or
// any other exception is a bug.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "tokenizer/chat_template.hpp"

namespace {

constexpr std::string_view kDefaultMessages =
    R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi {{ x }} é😀"},)"
    R"( {"role": "assistant", "content": "", "tool_calls": [{"id": "abc123def", "type": "function",)"
    R"( "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},)"
    R"( {"role": "tool", "tool_call_id": "abc123def", "content": "42"},)"
    R"( {"role": "user", "content": [{"type": "text", "text": " parts "}, {"type": "image"}]}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    const size_t nul = input.find('\0');
    const std::string_view source = input.substr(0, nul);
    const std::string_view messages = nul == std::string_view::npos ? kDefaultMessages : input.substr(nul + 1);
    try {
        // The same for every input: parsed once.
        static const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(
            R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
        static const nlohmann::ordered_json specials =
            nlohmann::ordered_json::parse(R"({"bos_token": "<s>", "eos_token": "</s>"})");
        const pagoda::tok::ChatTemplate tmpl(source);
        for (const bool add_generation_prompt : {false, true}) {
            pagoda::tok::ChatRenderOptions o;
            o.add_generation_prompt = add_generation_prompt;
            o.tools = add_generation_prompt ? &tools : nullptr;
            o.now = [] { return std::chrono::system_clock::from_time_t(1721989800); };
            o.limits.max_steps = 100000;
            o.limits.max_output_bytes = 1 << 20;
            (void)pagoda::tok::render_chat_text(tmpl, messages, o, specials);
        }
    } catch (const pagoda::Error &) {
        // The expected way to reject a template or messages.
    }
    return 0;
}
