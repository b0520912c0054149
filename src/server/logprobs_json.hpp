// Token log-probabilities as the OpenAI API writes them (completions' parallel lists, chat's
// content entries) and as vLLM writes prompt_logprobs, from the engine's arrays: per token its
// log-probability (NaN where there is none: a prompt's first token) and a row of the most
// likely tokens, `stride` entries per token of which the first `top` are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"

namespace pagoda::server {

struct ServedModel;

struct TokenLogprobs {
    const int32_t *ids = nullptr;
    const float *logprobs = nullptr;
    const pagoda_logprob_t *top_rows = nullptr;  // [count][stride], or NULL
    int32_t stride = 0;
    int32_t top = 0;  // entries written per token (<= stride)
    size_t count = 0;
};

// A token's text for logprobs ("token_id:N" without a tokenizer).
std::string token_piece(const ServedModel &model, int32_t id);

// {"tokens", "token_logprobs", "top_logprobs", "text_offset"}; `text_offset` counts on from
// `offset`, which is left after the last piece. A token without a logprob gets nulls.
nlohmann::json completion_logprobs(const ServedModel &model, const TokenLogprobs &t, size_t &offset);

// {"content": [{"token", "logprob", "bytes", "top_logprobs"}, ...]}.
nlohmann::json chat_logprobs(const ServedModel &model, const TokenLogprobs &t);

// vLLM's prompt_logprobs: per prompt token null (the first) or {"<id>": {"logprob", "rank",
// "decoded_token"}} holding the token itself and the `top` most likely. A rank is known for
// the tokens among the most likely (their place, from 1); the prompt token outside them gets
// null, as vLLM's Logprob allows.
nlohmann::json vllm_prompt_logprobs(const ServedModel &model, const TokenLogprobs &t);

}  // namespace pagoda::server
