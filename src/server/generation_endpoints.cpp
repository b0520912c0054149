// POST /v1/completions and POST /v1/chat/completions.
#include "server/api_error.hpp"
#include "server/bad_words.hpp"
#include "server/chat_prompt.hpp"
#include "server/chat_tools.hpp"
#include "server/connection.hpp"
#include "server/generation.hpp"
#include "server/request_parse.hpp"
#include "server/router.hpp"
#include "server/server.hpp"
#include "server/structured_output.hpp"

namespace pagoda::server {

namespace {

void handle_generation(Server &server, Connection &c, bool chat) {
    if (server.draining()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
    nlohmann::json body = parse_json_object(c.request().body);
    std::shared_ptr<ServedModel> model = resolve_model(server, requested_model(body));
    GenerationRequest request =
        chat ? parse_chat_request(body, model->limits) : parse_completion_request(body, model->limits);
    // A placement's model: its controller picks the replica, or rejects the request (429).
    if (model->placement_group >= 0) model = server.dispatch_model(model->name);
    tokenize_bad_words(model->tokenizer.get(), model->limits.vocab_size, request);
    keep_schema_order(c.request().body, request);
    std::string prompt;
    if (chat) {
        prepare_chat_tools(*model, request, c.request().body);
        const ToolRequest &t = request.tools;
        prompt = render_chat_prompt(*model, request.messages, request.add_generation_prompt,
                                    t.tools.empty() ? nullptr : &t.tools);
    }
    auto g = std::make_shared<Generation>(model, &c, std::move(request),
                                          server.next_id(chat ? "chatcmpl" : "cmpl"));
    for (uint64_t id : g->start(prompt)) model->generations.emplace(id, g);
    c.set_generation(g.get());
}

}  // namespace

void handle_completions(Server &server, Connection &c) { handle_generation(server, c, false); }

void handle_chat_completions(Server &server, Connection &c) { handle_generation(server, c, true); }

}  // namespace pagoda::server
