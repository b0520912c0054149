// JSON bodies of /v1/completions and /v1/chat/completions → what the engine is asked. Every
// field is checked here; anything the engine cannot honour is refused with 400 naming the field,
// never ignored. Pure functions of the body (no engine), so the fuzzer drives them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"
#include "server/tool_request.hpp"

namespace pagoda::server {

// What validation needs to know of the model a request names.
struct ModelLimits {
    int64_t vocab_size = 0;     // prompt ids must lie in [0, vocab_size)
    int64_t context_length = 0; // default max_tokens of chat; upper bound of max_tokens
};

// One prompt of /v1/completions: text, or token ids.
struct CompletionPrompt {
    std::string text;
    std::vector<int32_t> ids;  // when is_ids
    bool is_ids = false;
};

struct GenerationRequest {
    bool chat = false;
    std::string model;                  // "" = the only model served
    std::vector<CompletionPrompt> prompts;  // completions: one, or a batch (n choices each)
    std::string suffix;                 // completions: text after the insertion (FIM); "" = none
    nlohmann::json messages;            // chat: the checked messages array
    ToolRequest tools;                  // chat: tools, tool_choice, parallel_tool_calls
    bool add_generation_prompt = true;  // chat
    pagoda_request_options_t options{}; // without stop strings / ids (their pointers)
    std::vector<std::string> stop;
    std::vector<int32_t> stop_token_ids;
    bool stream = false;
    bool include_usage = false;         // stream_options.include_usage
    int32_t logprobs = -1;              // completions: top-n per token; chat: top_logprobs; -1 = none
    // echo: completions answer the prompt before the completion (its tokens' logprobs too, with
    // logprobs); chat, the last message's content when the assistant wrote it.
    bool echo = false;
    // max_tokens 0 with echo (scoring a prompt): one token is computed but nothing of it sent.
    bool prompt_only = false;
    int32_t prompt_logprobs = -1;       // vLLM's: per prompt token its logprob and top-n; -1 = none
    std::vector<pagoda_logit_bias_t> logit_bias;  // checked: ids in the vocabulary, |bias| <= 100
    std::vector<int32_t> allowed_token_ids;
    std::vector<std::string> bad_words;           // tokenized at submit (bad_words.hpp)
    std::vector<int32_t> bad_words_token_ids;     // every word's ids, one after another
    std::vector<size_t> bad_words_lengths;
    // The output's constraint (structured_output.hpp): a pagoda_constraint_kind_t, its text, and
    // the field it came from (named by a 400 when it does not compile).
    int32_t constraint_kind = 0;
    std::string constraint_text;
    std::string constraint_field;
};

// Throw ApiError(400, ..., param) for anything wrong.
GenerationRequest parse_completion_request(const nlohmann::json &body, const ModelLimits &limits);
GenerationRequest parse_chat_request(const nlohmann::json &body, const ModelLimits &limits);

// The "model" field alone ("" when absent), so the router can find the limits first.
std::string requested_model(const nlohmann::json &body);

// The body as a JSON object, or 400.
nlohmann::json parse_json_object(const std::string &body);

}  // namespace pagoda::server
