#include "server/router.hpp"

#include <new>

#include "common/error.hpp"
#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/server.hpp"

namespace pagoda::server {

namespace {

struct Route {
    const char *path;
    const char *method;
    bool needs_key;
    void (*handler)(Server &, Connection &);
};

// vLLM guards /v1 with its key; /tokenize, /detokenize and /apply-template reveal the model too. Probes
// (/health, /metrics) stay open, as in vLLM.
const Route kRoutes[] = {
    {"/health", "GET", false, handle_health},
    {"/metrics", "GET", false, handle_metrics},
    {"/v1/models", "GET", true, handle_models},
    {"/v1/completions", "POST", true, handle_completions},
    {"/v1/chat/completions", "POST", true, handle_chat_completions},
    {"/v1/embeddings", "POST", true, handle_embeddings},
    {"/tokenize", "POST", true, handle_tokenize},
    {"/detokenize", "POST", true, handle_detokenize},
    {"/apply-template", "POST", true, handle_apply_template},
};

// Compares in time independent of where the strings differ.
bool same_secret(const std::string &a, const std::string &b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

void check_key(const Server &s, const HttpRequest &r) {
    const std::string &key = s.options().api_key;
    if (key.empty()) return;
    const std::string *auth = r.header("Authorization");
    const std::string prefix = "Bearer ";
    if (auth == nullptr || auth->size() < prefix.size() || !equals_ignore_case(auth->substr(0, prefix.size()), prefix))
        throw ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", "", "invalid_api_key");
    if (!same_secret(auth->substr(prefix.size()), key))
        throw ApiError(401, "incorrect API key provided", "", "invalid_api_key");
}

void preflight(Server &s, Connection &c, bool origin_ok) {
    const HttpRequest &r = c.request();
    if (r.header("Origin") != nullptr && !origin_ok)
        throw ApiError(403, "origin '" + *r.header("Origin") + "' is not allowed to call this server", "",
                       "cors_origin_not_allowed");
    HttpResponse resp;
    resp.status = 204;
    resp.content_type.clear();
    if (origin_ok) {
        resp.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, OPTIONS"});
        const std::string *asked = r.header("Access-Control-Request-Headers");
        resp.headers.push_back({"Access-Control-Allow-Headers", asked ? *asked : "Authorization, Content-Type"});
        resp.headers.push_back({"Access-Control-Max-Age", "600"});
    } else {
        resp.headers.push_back({"Allow", "GET, POST, OPTIONS"});
    }
    (void)s;
    c.respond(resp);
}

}  // namespace

std::shared_ptr<ServedModel> resolve_model(const Server &server, const std::string &name) {
    if (auto m = server.find_model(name)) return m;
    if (!name.empty())
        throw ApiError(404, "the model '" + name + "' does not exist", "model", "model_not_found");
    if (server.models().empty()) throw ApiError(503, "no model is loaded yet", "model", "model_loading");
    throw ApiError(400, "model is required: this server serves several models", "model", "missing_model");
}

void route_request(Server &server, Connection &c) {
    const HttpRequest &r = c.request();
    const std::string *origin = r.header("Origin");
    bool origin_ok = origin != nullptr && server.options().origin_allowed(*origin);
    if (origin_ok) {
        c.extra_headers().push_back({"Access-Control-Allow-Origin", server.options().cors_any ? "*" : *origin});
        c.extra_headers().push_back({"Vary", "Origin"});
    }
    std::vector<Header> error_headers;
    try {
        const std::string path(r.path());
        if (r.method == "OPTIONS") {
            preflight(server, c, origin_ok);
            return;
        }
        const Route *found = nullptr;
        bool path_known = false;
        for (const Route &route : kRoutes) {
            if (path != route.path) continue;
            path_known = true;
            if (r.method == route.method) found = &route;
        }
        if (found == nullptr && path_known) {
            std::string allow;
            for (const Route &route : kRoutes)
                if (path == route.path) allow += std::string(allow.empty() ? "" : ", ") + route.method;
            error_headers.push_back({"Allow", allow + ", OPTIONS"});
            throw ApiError(405, "method " + r.method + " is not allowed on " + path + " (allowed: " + allow + ")");
        }
        if (found == nullptr) throw ApiError(404, "no such route: " + r.method + " " + path, "", "route_not_found");
        if (found->needs_key) check_key(server, r);
        found->handler(server, c);
    } catch (const ApiError &e) {
        HttpResponse resp = HttpResponse::json(e.status(), error_body(e));
        resp.headers = std::move(error_headers);
        if (e.status() == 401) resp.headers.push_back({"WWW-Authenticate", "Bearer"});
        c.respond(resp);
    } catch (const std::bad_alloc &) {
        c.respond(HttpResponse::json(503, error_body(503, "out of memory")));
    } catch (const Error &e) {
        int status = e.status() == PAGODA_ERR_INVALID_ARGUMENT ? 400 : 500;
        c.respond(HttpResponse::json(status, error_body(status, e.what())));
    } catch (const std::exception &e) {
        c.respond(HttpResponse::json(500, error_body(500, std::string("internal error: ") + e.what())));
    }
}

}  // namespace pagoda::server
