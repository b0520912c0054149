#include "server/logprobs_json.hpp"

#include <cmath>

#include "server/served_model.hpp"

namespace pagoda::server {

using nlohmann::json;

namespace {

json bytes_of(const std::string &s) {
    json b = json::array();
    for (unsigned char ch : s) b.push_back(int(ch));
    return b;
}

const pagoda_logprob_t *row(const TokenLogprobs &t, size_t i) {
    return t.top_rows == nullptr ? nullptr : t.top_rows + i * size_t(t.stride);
}

}  // namespace

// A byte token may hold half a UTF-8 sequence, which the JSON dump replaces.
std::string token_piece(const ServedModel &m, int32_t id) {
    if (m.tokenizer == nullptr) return "token_id:" + std::to_string(id);
    try {
        return m.tokenizer->token_to_piece(id);
    } catch (...) {
        return "token_id:" + std::to_string(id);
    }
}

json completion_logprobs(const ServedModel &m, const TokenLogprobs &t, size_t &offset) {
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
         offsets = json::array();
    for (size_t i = 0; i < t.count; ++i) {
        std::string p = token_piece(m, t.ids[i]);
        offsets.push_back(offset);
        offset += p.size();
        tokens.push_back(p);
        if (std::isnan(t.logprobs[i])) {  // a prompt's first token: nothing came before it
            token_logprobs.push_back(nullptr);
            top_logprobs.push_back(nullptr);
            continue;
        }
        token_logprobs.push_back(t.logprobs[i]);
        json top = json::object();
        const pagoda_logprob_t *r = row(t, i);
        for (int32_t k = 0; r != nullptr && k < t.top; ++k)
            top[token_piece(m, r[k].token_id)] = r[k].logprob;  // invalid UTF-8 replaced when dumped
        top_logprobs.push_back(std::move(top));
    }
    return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs},
                {"text_offset", offsets}};
}

json chat_logprobs(const ServedModel &m, const TokenLogprobs &t) {
    json content = json::array();
    for (size_t i = 0; i < t.count; ++i) {
        std::string p = token_piece(m, t.ids[i]);
        json top = json::array();
        const pagoda_logprob_t *r = row(t, i);
        for (int32_t k = 0; r != nullptr && k < t.top; ++k) {
            std::string tp = token_piece(m, r[k].token_id);
            top.push_back({{"token", tp}, {"logprob", r[k].logprob}, {"bytes", bytes_of(tp)}});
        }
        content.push_back({{"token", p}, {"logprob", t.logprobs[i]}, {"bytes", bytes_of(p)},
                           {"top_logprobs", std::move(top)}});
    }
    return json{{"content", std::move(content)}};
}

json vllm_prompt_logprobs(const ServedModel &m, const TokenLogprobs &t) {
    json out = json::array();
    for (size_t i = 0; i < t.count; ++i) {
        if (std::isnan(t.logprobs[i])) {
            out.push_back(nullptr);
            continue;
        }
        json entry = json::object();
        json own_rank = nullptr;
        const pagoda_logprob_t *r = row(t, i);
        for (int32_t k = 0; r != nullptr && k < t.top; ++k) {
            entry[std::to_string(r[k].token_id)] = {{"logprob", r[k].logprob},
                                                    {"rank", k + 1},
                                                    {"decoded_token", token_piece(m, r[k].token_id)}};
        }
        for (int32_t k = 0; r != nullptr && k < t.stride; ++k)  // the whole row: it may be longer
            if (r[k].token_id == t.ids[i]) own_rank = k + 1;
        entry[std::to_string(t.ids[i])] = {{"logprob", t.logprobs[i]},
                                           {"rank", own_rank},
                                           {"decoded_token", token_piece(m, t.ids[i])}};
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace pagoda::server
