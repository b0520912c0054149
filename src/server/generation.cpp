#include "server/generation.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

#include "common/error.hpp"
#include "sample/request_defaults.hpp"
#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/fill_in_middle.hpp"
#include "server/json_out.hpp"
#include "server/logprobs_json.hpp"
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

}  // namespace

Generation::Generation(std::shared_ptr<ServedModel> model, Connection *connection,
                       GenerationRequest request, std::string id)
    : model_(std::move(model)), connection_(connection), request_(std::move(request)), id_(std::move(id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count()) {
    parts_.resize(request_.chat ? 1 : request_.prompts.size());
    choices_.resize(parts_.size() * size_t(request_.options.n));
    if (request_.chat && request_.tools.parses_calls())
        for (Choice &c : choices_) c.tools = std::make_unique<ToolCallStream>(request_.tools);
}

Generation::~Generation() {
    if (connection_ != nullptr) connection_->set_generation(nullptr);
}

std::vector<uint64_t> Generation::start(const std::string &rendered_prompt) {
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
    // One engine computation serves both: echo's logprobs and vLLM's prompt_logprobs.
    const bool echo_logprobs = request_.echo && !request_.chat && request_.logprobs >= 0;
    o.prompt_logprobs = std::max(request_.prompt_logprobs, echo_logprobs ? request_.logprobs : -1);

    std::vector<uint64_t> ids;
    for (size_t i = 0; i < parts_.size(); ++i) {
        try {
            parts_[i].request_id = submit(parts_[i], rendered_prompt, i, o);
        } catch (...) {
            for (uint64_t submitted : ids) model_->driver->abort(submitted);
            throw;
        }
        ids.push_back(parts_[i].request_id);
        prepare_echo(parts_[i], i);
    }
    running_ = parts_.size();
    model_->driver->wake();
    if (request_.stream) connection_->begin_stream(200, "text/event-stream");
    return ids;
}

// Submits one prompt: as text when nothing here needs its tokens, else as the ids the engine
// would have made of it (or fill-in-the-middle's framing).
uint64_t Generation::submit(Part &part, const std::string &rendered_prompt, size_t index,
                            const pagoda_request_options_t &o) {
    const bool chat = request_.chat;
    const CompletionPrompt *prompt = chat ? nullptr : &request_.prompts[index];
    const std::string &text = chat ? rendered_prompt : prompt->text;
    const char *param = chat ? "messages" : "prompt";
    const std::string where =
        parts_.size() > 1 ? "prompt[" + std::to_string(index) + "]: " : std::string();
    const bool needs_ids = o.prompt_logprobs >= 0 || !request_.suffix.empty();
    const bool is_ids = prompt != nullptr && prompt->is_ids;
    if (model_->tokenizer == nullptr && (!is_ids || !request_.suffix.empty()))
        throw ApiError(400, "model '" + model_->name + "' has no tokenizer: send the prompt as token ids",
                       param, "no_tokenizer");
    try {
        if (!request_.suffix.empty()) {
            const std::optional<FimTokens> &fim = model_->fim;
            if (!fim)
                throw ApiError(400, "suffix: model '" + model_->name + "' defines no fill-in-the-middle "
                                    "tokens (looked for " + fim_spellings() + ")",
                               "suffix", "unsupported_value");
            static const std::vector<int32_t> none;
            part.prompt_ids = fim_prompt_ids(*model_->tokenizer, *fim, is_ids ? prompt->ids : none, is_ids,
                                             text, request_.suffix,
                                             (o.flags & PAGODA_REQUEST_NO_SPECIAL_TOKENS) == 0);
        } else if (is_ids) {
            part.prompt_ids = prompt->ids;
        } else if (needs_ids) {
            part.prompt_ids = model_->tokenizer->encode(text, sample::prompt_tokenize_flags(o.flags));
        }
    } catch (const Error &e) {
        throw ApiError(400, where + e.what(), param, "invalid_value");
    }
    uint64_t id = 0;
    pagoda_status_t s = part.prompt_ids.empty() && !is_ids
                            ? model_->engine->submit_text(text.data(), text.size(), o, &id)
                            : model_->engine->submit_tokens(part.prompt_ids.data(), part.prompt_ids.size(), o, &id);
    if (s != PAGODA_OK) {
        std::string message = last_error();
        if (s == PAGODA_ERR_INVALID_ARGUMENT) throw ApiError(400, where + message, param, "invalid_value");
        if (s == PAGODA_ERR_NOT_FOUND)
            throw ApiError(400, "model '" + model_->name + "' has no tokenizer: send the prompt as token ids",
                           param, "no_tokenizer");
        throw ApiError(500, message);
    }
    if (!needs_ids) part.prompt_ids.clear();  // kept only to name prompt tokens
    return id;
}

// Completions echo the prompt as sent (token ids decoded); chat echoes the last message when
// the assistant wrote it (vLLM: the reply continues it).
void Generation::prepare_echo(Part &part, size_t index) const {
    if (!request_.echo) return;
    if (request_.chat) {
        const nlohmann::json &last = request_.messages.back();
        if (last.value("role", "") == "assistant") part.echo_text = last.value("content", "");
        return;
    }
    const CompletionPrompt &p = request_.prompts[index];
    if (!p.is_ids) {
        part.echo_text = p.text;
    } else if (model_->tokenizer != nullptr) {
        try {
            part.echo_text = model_->tokenizer->decode(p.ids, 0);
        } catch (const Error &) {
        }  // ids were checked against the vocabulary; a decode failure leaves no echo text
    }
}

// The request's first output carries its prompt's logprobs (when asked): kept for each choice.
void Generation::record_prompt_logprobs(Part &part, const pagoda_output_t &out) const {
    if (out.prompt_logprobs == nullptr || part.prompt_ids.size() != out.n_prompt_tokens) return;
    TokenLogprobs t;
    t.ids = part.prompt_ids.data();
    t.logprobs = out.prompt_logprobs;
    t.top_rows = out.prompt_top_logprobs;
    t.stride = out.n_prompt_top_logprobs;
    t.count = out.n_prompt_tokens;
    if (request_.echo && !request_.chat && request_.logprobs >= 0) {
        t.top = std::min(request_.logprobs, t.stride);
        part.echo_offset = 0;
        part.echo_logprobs = completion_logprobs(*model_, t, part.echo_offset);
    }
    if (request_.prompt_logprobs >= 0) {
        t.top = std::min(request_.prompt_logprobs, t.stride);
        part.prompt_logprobs = vllm_prompt_logprobs(*model_, t);
    }
}

json Generation::envelope(bool chunk) const {
    const char *object = request_.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json{{"id", id_}, {"object", object}, {"created", created_}, {"model", model_->name}};
}

json Generation::usage() const {
    size_t prompt = 0, completion = 0;
    for (const Part &p : parts_) prompt += p.prompt_tokens;
    for (const Choice &c : choices_) completion += c.generated;
    return json{{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
}

json Generation::logprobs_json(const pagoda_output_t &out, Choice &c) const {
    if (request_.logprobs < 0 || out.logprobs == nullptr || out.n_tokens == 0) return json();
    TokenLogprobs t;
    t.ids = out.token_ids;
    t.logprobs = out.logprobs;
    t.top_rows = out.top_logprobs;
    t.stride = t.top = out.top_logprobs != nullptr ? out.n_top_logprobs : 0;
    t.count = out.n_tokens;
    return request_.chat ? chat_logprobs(*model_, t) : completion_logprobs(*model_, t, c.text_offset);
}

void Generation::append_logprobs(json &into, const json &more) {
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

void Generation::stream_output(size_t index, std::string text, json lp, Choice &c) {
    bool first_chat = request_.chat && !c.role_sent;
    json tool_calls;
    if (c.tools) {
        ToolCallStream::Delta d = c.tools->push(text, c.finish_reason != nullptr);
        text = std::move(d.content);
        if (!d.tool_calls.empty()) tool_calls = std::move(d.tool_calls);
    }
    if (text.empty() && tool_calls.is_null() && c.finish_reason == nullptr && lp.is_null() &&
        !first_chat)
        return;
    json choice = {{"index", index}};
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
    choice["logprobs"] = std::move(lp);
    choice["finish_reason"] = finish_reason(c, nullptr);
    json event = envelope(true);
    event["choices"] = json::array({std::move(choice)});
    if (request_.include_usage) event["usage"] = json();
    send_event(connection_, event);
}

void Generation::on_output(const pagoda_output_t &out) {
    // Engine ids grow with submission, so the parts are in id order.
    auto part_it = std::lower_bound(parts_.begin(), parts_.end(), out.request_id,
                                    [](const Part &p, uint64_t id) { return p.request_id < id; });
    if (part_it == parts_.end() || part_it->request_id != out.request_id || part_it->finished) return;
    Part &part = *part_it;
    part.prompt_tokens = out.n_prompt_tokens;
    record_prompt_logprobs(part, out);
    const size_t n = size_t(request_.options.n);
    if (out.sequence_index >= 0 && size_t(out.sequence_index) < n) {
        const size_t index = size_t(part_it - parts_.begin()) * n + size_t(out.sequence_index);
        Choice &c = choices_[index];
        c.generated = request_.prompt_only ? 0 : out.n_generated;
        if (out.finish_reason != PAGODA_FINISH_NONE) c.finish_reason = finish_name(static_cast<pagoda_finish_reason_t>(out.finish_reason));
        if (out.finish_reason == PAGODA_FINISH_ERROR && error_status_ == PAGODA_OK) {
            error_status_ = out.status == PAGODA_OK ? PAGODA_ERR_INTERNAL : static_cast<pagoda_status_t>(out.status);
            error_ = out.error != nullptr ? out.error : "the engine failed";
        }
        if (connection_ != nullptr) {
            std::string text;
            json lp;
            if (!c.started) {  // echo comes first
                c.started = true;
                text = part.echo_text;
                lp = part.echo_logprobs;
                c.text_offset = part.echo_offset;
            }
            if (!request_.prompt_only) {  // max_tokens 0: the one token computed is not sent
                text.append(out.text, out.text_len);
                append_logprobs(lp, logprobs_json(out, c));
            }
            if (request_.stream && out.finish_reason != PAGODA_FINISH_ERROR) {
                stream_output(index, std::move(text), std::move(lp), c);
            } else {
                c.text += text;
                append_logprobs(c.logprobs, lp);
            }
        }
    }
    if (!out.request_finished) return;
    part.finished = true;
    --running_;
    if (error_status_ != PAGODA_OK) abort_running();  // the answer is an error: stop the rest
    if (running_ == 0) finish();
}

void Generation::finish() {
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
        const Part &part = parts_[i / size_t(request_.options.n)];
        json choice = {{"index", i}};
        if (c.tools)
            choice["message"] = c.tools->message(c.text);
        else if (request_.chat)
            choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        else
            choice["text"] = c.text;
        choice["logprobs"] = c.logprobs;
        choice["finish_reason"] = request_.prompt_only ? json("length") : finish_reason(c, "stop");
        if (!request_.chat && request_.prompt_logprobs >= 0) choice["prompt_logprobs"] = part.prompt_logprobs;
        choices.push_back(std::move(choice));
    }
    body["choices"] = std::move(choices);
    if (request_.chat && request_.prompt_logprobs >= 0) body["prompt_logprobs"] = parts_[0].prompt_logprobs;
    body["usage"] = usage();
    conn->respond(HttpResponse::json(200, dump_json(body)));
}

void Generation::abort_running() {
    for (const Part &p : parts_)
        if (!p.finished && p.request_id != 0) model_->driver->abort(p.request_id);
}

void Generation::client_gone() {
    if (connection_ == nullptr) return;
    connection_ = nullptr;
    abort_running();
}

void Generation::abort_for_shutdown() {
    if (connection_ == nullptr || shutdown_abort_) return;  // called once per part
    shutdown_abort_ = true;
    abort_running();
}

}  // namespace pagoda::server
