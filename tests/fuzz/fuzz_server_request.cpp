// libFuzzer target: an HTTP request body (the first byte picks /v1/completions or
// /v1/chat/completions) through the server's JSON parsing and validation into engine request
// options. Whatever the bytes, the result is either options within the documented ranges or an
// ApiError with a 4xx/5xx status whose error object serializes (invalid UTF-8 included);
// nothing else may be thrown.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/api_error.hpp"
#include "server/request_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace pagoda::server;
    if (size == 0) return 0;
    const bool chat = (data[0] & 1) != 0;
    const std::string body(reinterpret_cast<const char *>(data + 1), size - 1);
    const ModelLimits limits{32000, 2048};
    try {
        nlohmann::json j = parse_json_object(body);
        GenerationRequest r = chat ? parse_chat_request(j, limits) : parse_completion_request(j, limits);
        const pagoda_request_options_t &o = r.options;
        if (o.n < 1 || o.n > 16 || o.best_of < o.n || o.best_of > 16) __builtin_trap();
        if (o.max_tokens < 1 || o.max_tokens > limits.context_length) __builtin_trap();
        if (!(o.temperature >= 0.0f && o.temperature <= 2.0f)) __builtin_trap();
        if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) __builtin_trap();
        if (o.logprobs < -1 || o.logprobs > 20) __builtin_trap();
        if (!chat && (r.prompts.empty() || r.prompts.size() * size_t(o.n) > 1024)) __builtin_trap();
        for (const CompletionPrompt &p : r.prompts) {
            for (int32_t id : p.ids)
                if (id < 0 || id >= limits.vocab_size) __builtin_trap();
            if (p.is_ids ? p.ids.empty() : p.text.empty()) __builtin_trap();
        }
        if (r.prompt_logprobs < -1 || r.prompt_logprobs > 20) __builtin_trap();
        if (r.prompt_only && !r.echo) __builtin_trap();
        if (chat && (!r.messages.is_array() || r.messages.empty())) __builtin_trap();
        for (const std::string &s : r.stop)
            if (s.empty()) __builtin_trap();
    } catch (const ApiError &e) {
        if (e.status() < 400 || e.status() > 599) __builtin_trap();
        if (error_body(e).empty()) __builtin_trap();
    }
    return 0;
}
