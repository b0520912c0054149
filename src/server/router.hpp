// Routing of one parsed request: CORS, the API key, the method and path to an endpoint, and
// every error as OpenAI's error object. Endpoints are in *_endpoints.cpp.
#pragma once

#include <memory>
#include <string>

namespace pagoda::server {

class Server;
class Connection;
struct ServedModel;

// Answers (or starts answering) the connection's current request.
void route_request(Server &server, Connection &connection);

// The model a request names ("" = the only one served); throws ApiError 404, 400 or 503.
std::shared_ptr<ServedModel> resolve_model(const Server &server, const std::string &name);

// Endpoints.
void handle_health(Server &server, Connection &connection);
void handle_models(Server &server, Connection &connection);
void handle_metrics(Server &server, Connection &connection);
void handle_tokenize(Server &server, Connection &connection);
void handle_detokenize(Server &server, Connection &connection);
void handle_apply_template(Server &server, Connection &connection);
void handle_completions(Server &server, Connection &connection);
void handle_chat_completions(Server &server, Connection &connection);
void handle_embeddings(Server &server, Connection &connection);

}  // namespace pagoda::server
