// POST /v1/embeddings: OpenAI's embeddings over a decoder model (vLLM's pooling runner): the
// prompt's hidden states after the final norm, pooled and normalized by the engine
// (PAGODA_REQUEST_EMBED), one engine request per input.
#include <memory>

#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/embedding.hpp"
#include "server/embedding_request.hpp"
#include "server/request_parse.hpp"
#include "server/router.hpp"
#include "server/served_model.hpp"
#include "server/server.hpp"

namespace pagoda::server {

void handle_embeddings(Server &server, Connection &c) {
    if (server.draining()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
    nlohmann::json body = parse_json_object(c.request().body);
    std::shared_ptr<ServedModel> model = resolve_model(server, requested_model(body));
    EmbeddingLimits limits;
    limits.vocab_size = model->limits.vocab_size;
    limits.context_length = model->limits.context_length;
    limits.dimensions = model->embedding_size;
    EmbeddingRequest request = parse_embedding_request(body, limits);
    auto e = std::make_shared<Embedding>(model, &c, std::move(request), server.next_id("embd"));
    for (uint64_t id : e->start()) model->embeddings.emplace(id, e);
    c.set_embedding(e.get());
}

}  // namespace pagoda::server
