// One /v1/embeddings request from submission to its answer: one engine request per input, all
// submitted at once so the engine batches them with whatever else runs (an embedding request
// is prefilled like any prompt and ends when its prompt is computed). The answer goes out when
// every input's vector is in, in input order. Held (shared) by its ServedModel's table under
// each engine request id until that request's last output, which may come after the client
// has gone (the aborts' outputs free it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/embedding_request.hpp"

namespace pagoda::server {

class Connection;
struct ServedModel;

class Embedding {
public:
    Embedding(std::shared_ptr<ServedModel> model, Connection *connection, EmbeddingRequest request,
              std::string id);
    ~Embedding();
    Embedding(const Embedding &) = delete;
    Embedding &operator=(const Embedding &) = delete;

    // Submits every input and returns their engine request ids, in input order. When the
    // engine refuses one, what was submitted is aborted and ApiError thrown (400 naming the
    // input for a bad prompt).
    std::vector<uint64_t> start();

    // An output of one of its requests, polled on the loop thread.
    void on_output(const pagoda_output_t &out);
    // The connection closed: abort what still runs (the last outputs still come).
    void client_gone();
    // The server's drain deadline passed: abort; the client hears 503.
    void abort_for_shutdown();

private:
    struct Result {
        uint64_t request_id = 0;
        bool done = false;
        std::vector<float> vector;
        size_t prompt_tokens = 0;
    };

    void abort_running();
    void answer();
    std::string response_body() const;

    std::shared_ptr<ServedModel> model_;
    Connection *connection_;
    EmbeddingRequest request_;
    std::string id_;
    int64_t created_;
    std::vector<Result> results_;
    size_t remaining_ = 0;
    bool shutdown_abort_ = false;
    int error_http_ = 0;  // the first failure's HTTP status (0: none yet)
    std::string error_;
};

}  // namespace pagoda::server
