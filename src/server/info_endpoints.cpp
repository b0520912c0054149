// GET /health, GET /v1/models, GET /metrics, POST /tokenize, POST /detokenize, POST /apply-template.
#include <set>

#include "pagoda/tokenizer.h"
#include "server/api_error.hpp"
#include "server/chat_prompt.hpp"
#include "server/connection.hpp"
#include "server/json_out.hpp"
#include "server/metrics.hpp"
#include "server/request_parse.hpp"
#include "server/router.hpp"
#include "server/server.hpp"

namespace pagoda::server {

using nlohmann::json;

namespace {

void refuse_unknown(const json &body, std::initializer_list<const char *> known) {
    for (auto it = body.begin(); it != body.end(); ++it) {
        bool ok = false;
        for (const char *k : known) ok = ok || it.key() == k;
        if (!ok) invalid_field(it.key(), "unknown field '" + it.key() + "': this server does not support it");
    }
}

bool bool_field(const json &body, const char *name, bool dflt) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) invalid_field(name, std::string(name) + " must be a boolean");
    return it->get<bool>();
}

const tok::Tokenizer &tokenizer_of(const ServedModel &m) {
    if (m.tokenizer == nullptr)
        throw ApiError(400, "model '" + m.name + "' has no tokenizer", "model", "no_tokenizer");
    return *m.tokenizer;
}

}  // namespace

void handle_health(Server &server, Connection &c) {
    if (server.draining()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
    if (server.models().empty()) throw ApiError(503, "no model is loaded yet", "", "model_loading");
    c.respond(HttpResponse::json(200, R"({"status":"ok"})"));
}

void handle_models(Server &server, Connection &c) {
    json data = json::array();
    std::set<std::string> listed;  // a placement's replicas share their model's name
    for (const auto &m : server.models())
        if (listed.insert(m->name).second)
            data.push_back({{"id", m->name},
                        {"object", "model"},
                        {"created", m->created},
                        {"owned_by", "pagoda"},
                        {"root", m->name},
                        {"parent", nullptr},
                        {"max_model_len", m->limits.context_length}});
    c.respond(HttpResponse::json(200, dump_json(json{{"object", "list"}, {"data", std::move(data)}})));
}

void handle_metrics(Server &server, Connection &c) {
    std::vector<MetricsSource> sources;
    for (const auto &m : server.models()) sources.push_back({m->name, m->engine.get(), m->placement_group});
    std::vector<SloRejections> rejections;
    if (const PlacementRouting *p = server.placement())
        for (size_t i = 0; i < p->placement().models.size(); ++i)
            rejections.push_back({p->placement().models[i].name, p->rejected(uint32_t(i))});
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = render_metrics(sources, rejections);
    c.respond(r);
}

void handle_tokenize(Server &server, Connection &c) {
    json body = parse_json_object(c.request().body);
    refuse_unknown(body, {"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt",
                          "return_token_strs"});
    std::shared_ptr<ServedModel> m = resolve_model(server, requested_model(body));
    const tok::Tokenizer &t = tokenizer_of(*m);
    std::string text;
    bool add_special = bool_field(body, "add_special_tokens", true);
    if (body.contains("messages") && !body["messages"].is_null()) {
        // Chat messages go through the same renderer as /v1/chat/completions (and its checks).
        json chat = {{"messages", body["messages"]}};
        GenerationRequest req = parse_chat_request(chat, m->limits);
        text = render_chat_prompt(*m, req.messages, bool_field(body, "add_generation_prompt", true));
        add_special = bool_field(body, "add_special_tokens", false);
    } else {
        auto p = body.find("prompt");
        if (p == body.end() || !p->is_string()) invalid_field("prompt", "prompt must be a string");
        text = p->get<std::string>();
    }
    // Special tokens spelled in the text are those tokens, as Hugging Face's encode (and vLLM's
    // /tokenize, and the engine for a prompt) reads them.
    const uint32_t flags = PAGODA_TOKENIZE_PARSE_SPECIAL | (add_special ? PAGODA_TOKENIZE_ADD_SPECIAL : 0u);
    std::vector<int32_t> ids = t.encode(text, flags);
    json out = {{"count", ids.size()}, {"max_model_len", m->limits.context_length}, {"tokens", ids}};
    if (bool_field(body, "return_token_strs", false)) {
        json strs = json::array();
        for (int32_t id : ids) strs.push_back(t.token_to_piece(id));
        out["token_strs"] = std::move(strs);
    }
    c.respond(HttpResponse::json(200, dump_json(out)));
}

void handle_detokenize(Server &server, Connection &c) {
    json body = parse_json_object(c.request().body);
    refuse_unknown(body, {"model", "tokens"});
    std::shared_ptr<ServedModel> m = resolve_model(server, requested_model(body));
    const tok::Tokenizer &t = tokenizer_of(*m);
    auto tokens = body.find("tokens");
    if (tokens == body.end() || !tokens->is_array()) invalid_field("tokens", "tokens must be an array of token ids");
    std::vector<int32_t> ids;
    for (const json &v : *tokens) {
        if (!v.is_number_integer()) invalid_field("tokens", "tokens must hold integer token ids");
        int64_t id = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
        if (id < 0 || id >= t.vocab_size())
            invalid_field("tokens", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                        std::to_string(t.vocab_size()) + ")");
        ids.push_back(int32_t(id));
    }
    c.respond(HttpResponse::json(200, dump_json(json{{"prompt", t.decode(ids, 0)}})));
}

// llama-server's name: the prompt text a chat request would be given, without generating.
void handle_apply_template(Server &server, Connection &c) {
    json body = parse_json_object(c.request().body);
    refuse_unknown(body, {"model", "messages", "add_generation_prompt", "tools"});
    std::shared_ptr<ServedModel> m = resolve_model(server, requested_model(body));
    json chat = {{"messages", body.contains("messages") ? body["messages"] : json()}};
    if (body.contains("tools")) chat["tools"] = body["tools"];  // as the chat would render them
    GenerationRequest req = parse_chat_request(chat, m->limits);
    keep_client_order(req.tools, c.request().body);
    const nlohmann::ordered_json *tools = req.tools.tools.empty() ? nullptr : &req.tools.tools;
    const std::string text =
        render_chat_prompt(*m, req.messages, bool_field(body, "add_generation_prompt", true), tools);
    c.respond(HttpResponse::json(200, dump_json(json{{"prompt", text}})));
}

}  // namespace pagoda::server
