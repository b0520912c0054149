#include "server/generation.hpp"

#include <chrono>
#include <string_view>

#include "common/error.hpp"
#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/json_out.hpp"
#include "server/served_model.hpp"

namespace pagoda::server {

using nlohmann::json;

namespace {

const char *finish_name(pagoda_finish_reason_t r) {
    switch (r) {
    case PAGODA_FINISH_LENGTH: return "length";
    case PAGODA_FINISH_STOP_TOKEN:
    case PAGODA_FINISH_STOP_STRING: return "stop";
    case PAGODA_FINISH_ABORTED: return "abort";
    case PAGODA_FINISH_ERROR: return "error";
    default: return nullptr;
    }
}

// A piece of token text for logprobs; a byte token may hold half a UTF-8 sequence, which the
// JSON dump replaces.
std::string piece(const ServedModel &m, int32_t id) {
    if (m.tokenizer == nullptr) return "token_id:" + std::to_string(id);
    try {
        return m.tokenizer->token_to_piece(id);
    } catch (...) {
        return "token_id:" + std::to_string(id);
    }
}

json bytes_of(const std::string &s) {
    json b = json::array();
    for (unsigned char ch : s) b.push_back(int(ch));
    return b;
}

}  // namespace

Generation::Generation(std::shared_ptr<ServedModel> model, Connection *connection,
                       GenerationRequest request, std::string id)
    : model_(std::move(model)), connection_(connection), request_(std::move(request)), id_(std::move(id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count()) {
    choices_.resize(size_t(request_.options.n));
    if (request_.chat && request_.tools.parses_calls())
        for (Choice &c : choices_) c.tools = std::make_unique<ToolCallStream>(request_.tools);
}

Generation::~Generation() {
    if (connection_ != nullptr) connection_->set_generation(nullptr);
}

void Generation::start(const std::string &rendered_prompt) {
    pagoda_request_options_t o = request_.options;
    std::vector<const char *> stops;
    for (const std::string &s : request_.stop) stops.push_back(s.c_str());
    o.stop_strings = stops.empty() ? nullptr : stops.data();
    o.n_stop_strings = stops.size();
    o.stop_token_ids = request_.stop_token_ids.empty() ? nullptr : request_.stop_token_ids.data();
    o.n_stop_token_ids = request_.stop_token_ids.size();
    auto items = [](const auto &v) { return v.empty() ? nullptr : v.data(); };
    o.logit_bias = items(request_.logit_bias);
    o.n_logit_bias = request_.logit_bias.size();
    o.allowed_token_ids = items(request_.allowed_token_ids);
    o.n_allowed_token_ids = request_.allowed_token_ids.size();
    o.bad_words_token_ids = items(request_.bad_words_token_ids);
    o.bad_words_lengths = items(request_.bad_words_lengths);
    o.n_bad_words = request_.bad_words_lengths.size();
    if (!request_.tools.grammar.empty()) {  // a forced tool call (chat_tools.hpp)
        o.constraint_kind = PAGODA_CONSTRAINT_GRAMMAR;
        o.constraint = request_.tools.grammar.c_str();
    }
    if (request_.constraint_kind != PAGODA_CONSTRAINT_NONE) {  // structured_output.hpp
        if (!request_.tools.grammar.empty())
            invalid_field(request_.constraint_field,
                          request_.constraint_field + " cannot be combined with a forced tool call "
                                                      "(tool_choice \"required\" or a function), "
                                                      "which constrains the output itself");
        o.constraint_kind = request_.constraint_kind;
        o.constraint = request_.constraint_text.c_str();
    }
    pagoda_status_t s;
    if (request_.chat)
        s = model_->engine->submit_text(rendered_prompt.data(), rendered_prompt.size(), o, &request_id_);
    else if (request_.prompt_is_ids)
        s = model_->engine->submit_tokens(request_.prompt_ids.data(), request_.prompt_ids.size(), o, &request_id_);
    else
        s = model_->engine->submit_text(request_.prompt_text.data(), request_.prompt_text.size(), o, &request_id_);
    if (s != PAGODA_OK) {
        std::string message = last_error();
        const char *param = request_.chat ? "messages" : "prompt";
        if (s == PAGODA_ERR_INVALID_ARGUMENT) throw ApiError(400, message, param, "invalid_value");
        if (s == PAGODA_ERR_NOT_FOUND)
            throw ApiError(400, "model '" + model_->name + "' has no tokenizer: send the prompt as token ids",
                           param, "no_tokenizer");
        throw ApiError(500, message);
    }
    model_->driver->wake();
    if (request_.stream) connection_->begin_stream(200, "text/event-stream");
}

json Generation::envelope(bool chunk) const {
    const char *object = request_.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json{{"id", id_}, {"object", object}, {"created", created_}, {"model", model_->name}};
}

json Generation::usage() const {
    size_t completion = 0;
    for (const Choice &c : choices_) completion += c.generated;
    return json{{"prompt_tokens", prompt_tokens_},
                {"completion_tokens", completion},
                {"total_tokens", prompt_tokens_ + completion}};
}

json Generation::logprobs_json(const pagoda_output_t &out, Choice &c) const {
    if (request_.logprobs < 0 || out.logprobs == nullptr || out.n_tokens == 0) return json();
    const ServedModel &m = *model_;
    if (request_.chat) {
        json content = json::array();
        for (size_t i = 0; i < out.n_tokens; ++i) {
            std::string p = piece(m, out.token_ids[i]);
            json top = json::array();
            for (int32_t k = 0; out.top_logprobs != nullptr && k < out.n_top_logprobs; ++k) {
                const pagoda_logprob_t &t = out.top_logprobs[i * size_t(out.n_top_logprobs) + size_t(k)];
                std::string tp = piece(m, t.token_id);
                top.push_back({{"token", tp}, {"logprob", t.logprob}, {"bytes", bytes_of(tp)}});
            }
            content.push_back({{"token", p}, {"logprob", out.logprobs[i]}, {"bytes", bytes_of(p)},
                               {"top_logprobs", std::move(top)}});
        }
        return json{{"content", std::move(content)}};
    }
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
         offsets = json::array();
    for (size_t i = 0; i < out.n_tokens; ++i) {
        std::string p = piece(m, out.token_ids[i]);
        offsets.push_back(c.text_offset);
        c.text_offset += p.size();
        tokens.push_back(p);
        token_logprobs.push_back(out.logprobs[i]);
        json top = json::object();
        for (int32_t k = 0; out.top_logprobs != nullptr && k < out.n_top_logprobs; ++k) {
            const pagoda_logprob_t &t = out.top_logprobs[i * size_t(out.n_top_logprobs) + size_t(k)];
            top[piece(m, t.token_id)] = t.logprob;  // invalid UTF-8 is replaced when dumped
        }
        top_logprobs.push_back(std::move(top));
    }
    return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs},
                {"text_offset", offsets}};
}

void Generation::append_logprobs(json &into, const json &more) const {
    if (more.is_null()) return;
    if (into.is_null()) {
        into = more;
        return;
    }
    for (auto it = more.begin(); it != more.end(); ++it)
        for (const json &x : *it) into[it.key()].push_back(x);
}

void Generation::send_event(Connection *conn, const json &event) {
    conn->send_chunk("data: " + dump_json(event) + "\n\n");
}

// OpenAI's "tool_calls" once a choice made calls (vLLM's rule, whatever ended the text after
// them), unless it was aborted or failed.
json Generation::finish_reason(const Choice &c, const char *unfinished) {
    const char *r = c.finish_reason ? c.finish_reason : unfinished;
    if (r == nullptr) return json();
    const std::string_view reason(r);
    if (c.tools && c.tools->called() && reason != "abort" && reason != "error") return "tool_calls";
    return r;
}

void Generation::stream_output(const pagoda_output_t &out, Choice &c) {
    json lp = logprobs_json(out, c);
    bool first_chat = request_.chat && !c.role_sent;
    std::string text(out.text, out.text_len);
    json tool_calls;
    if (c.tools) {
        ToolCallStream::Delta d = c.tools->push(text, c.finish_reason != nullptr);
        text = std::move(d.content);
        if (!d.tool_calls.empty()) tool_calls = std::move(d.tool_calls);
    }
    if (text.empty() && tool_calls.is_null() && c.finish_reason == nullptr && lp.is_null() &&
        !first_chat)
        return;
    json choice = {{"index", out.sequence_index}};
    if (request_.chat) {
        json delta = json::object();
        if (first_chat) delta["role"] = "assistant";
        if (!text.empty() || first_chat) delta["content"] = text;
        if (!tool_calls.is_null()) delta["tool_calls"] = std::move(tool_calls);
        c.role_sent = true;
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = text;
    }
    choice["logprobs"] = lp;
    choice["finish_reason"] = finish_reason(c, nullptr);
    json event = envelope(true);
    event["choices"] = json::array({std::move(choice)});
    if (request_.include_usage) event["usage"] = json();
    send_event(connection_, event);
}

void Generation::on_output(const pagoda_output_t &out) {
    if (out.sequence_index >= 0 && size_t(out.sequence_index) < choices_.size()) {
        Choice &c = choices_[size_t(out.sequence_index)];
        prompt_tokens_ = out.n_prompt_tokens;
        c.generated = out.n_generated;
        if (out.finish_reason != PAGODA_FINISH_NONE) c.finish_reason = finish_name(static_cast<pagoda_finish_reason_t>(out.finish_reason));
        if (out.finish_reason == PAGODA_FINISH_ERROR && error_status_ == PAGODA_OK) {
            error_status_ = out.status == PAGODA_OK ? PAGODA_ERR_INTERNAL : static_cast<pagoda_status_t>(out.status);
            error_ = out.error != nullptr ? out.error : "the engine failed";
        }
        if (connection_ != nullptr) {
            if (request_.stream && out.finish_reason != PAGODA_FINISH_ERROR) {
                stream_output(out, c);
            } else {
                c.text.append(out.text, out.text_len);
                append_logprobs(c.logprobs, logprobs_json(out, c));
            }
        }
    }
    if (out.request_finished) finish(out);
}

void Generation::finish(const pagoda_output_t &) {
    if (connection_ == nullptr) return;
    Connection *conn = connection_;
    connection_ = nullptr;
    conn->set_generation(nullptr);
    int error_http = error_status_ == PAGODA_ERR_INVALID_ARGUMENT ? 400 : 500;
    if (request_.stream) {
        if (error_status_ != PAGODA_OK)
            send_event(conn, json::parse(error_body(error_http, error_)));
        else if (request_.include_usage) {
            json event = envelope(true);
            event["choices"] = json::array();
            event["usage"] = usage();
            send_event(conn, event);
        }
        conn->send_chunk("data: [DONE]\n\n");
        conn->end_stream();
        return;
    }
    if (shutdown_abort_) {
        conn->respond(HttpResponse::json(503, error_body(503, "the server is shutting down: the request was aborted")));
        return;
    }
    if (error_status_ != PAGODA_OK) {
        conn->respond(HttpResponse::json(error_http, error_body(error_http, error_)));
        return;
    }
    json body = envelope(false);
    json choices = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
        Choice &c = choices_[i];
        json choice = {{"index", i}};
        if (c.tools)
            choice["message"] = c.tools->message(c.text);
        else if (request_.chat)
            choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        else
            choice["text"] = c.text;
        choice["logprobs"] = c.logprobs;
        choice["finish_reason"] = finish_reason(c, "stop");
        choices.push_back(std::move(choice));
    }
    body["choices"] = std::move(choices);
    body["usage"] = usage();
    conn->respond(HttpResponse::json(200, dump_json(body)));
}

void Generation::client_gone() {
    if (connection_ == nullptr) return;
    connection_ = nullptr;
    model_->driver->abort(request_id_);
}

void Generation::abort_for_shutdown() {
    if (connection_ == nullptr) return;
    shutdown_abort_ = true;
    model_->driver->abort(request_id_);
}

}  // namespace pagoda::server
