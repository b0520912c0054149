#include "server/embedding.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/error.hpp"
#include "sample/request_defaults.hpp"
#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/embedding_text.hpp"
#include "server/json_out.hpp"
#include "server/served_model.hpp"

namespace pagoda::server {

Embedding::Embedding(std::shared_ptr<ServedModel> model, Connection *connection,
                     EmbeddingRequest request, std::string id)
    : model_(std::move(model)), connection_(connection), request_(std::move(request)),
      id_(std::move(id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()) {}

Embedding::~Embedding() {
    if (connection_ != nullptr) connection_->set_embedding(nullptr);
}

std::vector<uint64_t> Embedding::start() {
    pagoda_request_options_t o = sample::default_request_options();
    o.flags = PAGODA_REQUEST_EMBED;
    if (!request_.add_special_tokens) o.flags |= PAGODA_REQUEST_NO_SPECIAL_TOKENS;
    o.pooling = request_.pooling;
    o.embedding_normalize = request_.normalize;
    std::vector<uint64_t> ids;
    results_.assign(request_.inputs.size(), Result{});
    for (size_t i = 0; i < request_.inputs.size(); ++i) {
        const EmbeddingInput &in = request_.inputs[i];
        uint64_t id = 0;
        const pagoda_status_t s =
            in.is_ids ? model_->engine->submit_tokens(in.ids.data(), in.ids.size(), o, &id)
                      : model_->engine->submit_text(in.text.data(), in.text.size(), o, &id);
        if (s != PAGODA_OK) {
            const std::string message = last_error();
            for (uint64_t submitted : ids) model_->driver->abort(submitted);
            const std::string where =
                request_.inputs.size() > 1 ? "input[" + std::to_string(i) + "]: " : "input: ";
            if (s == PAGODA_ERR_INVALID_ARGUMENT)
                throw ApiError(400, where + message, "input", "invalid_value");
            if (s == PAGODA_ERR_NOT_FOUND)
                throw ApiError(400, "model '" + model_->name +
                                        "' has no tokenizer: send the input as token ids",
                               "input", "no_tokenizer");
            if (s == PAGODA_ERR_UNSUPPORTED)
                throw ApiError(400, "model '" + model_->name + "' cannot embed: " + message,
                               "model", "model_not_supported");
            throw ApiError(500, message);
        }
        results_[i].request_id = id;
        ids.push_back(id);
    }
    remaining_ = ids.size();
    model_->driver->wake();
    return ids;
}

void Embedding::on_output(const pagoda_output_t &out) {
    // Engine ids grow with submission, so the results are in id order.
    auto it = std::lower_bound(results_.begin(), results_.end(), out.request_id,
                               [](const Result &r, uint64_t id) { return r.request_id < id; });
    if (it == results_.end() || it->request_id != out.request_id || it->done) return;
    if (!out.request_finished) return;  // an embedding request has one output
    it->done = true;
    --remaining_;
    const size_t index = size_t(it - results_.begin());
    if (out.finish_reason == PAGODA_FINISH_STOP_TOKEN && out.embedding != nullptr) {
        it->vector.assign(out.embedding, out.embedding + out.n_embedding);
        it->prompt_tokens = out.n_prompt_tokens;
        if (!std::all_of(it->vector.begin(), it->vector.end(),
                         [](float x) { return std::isfinite(x); }) &&
            error_http_ == 0) {
            error_http_ = 500;
            error_ = "input[" + std::to_string(index) + "]: the model's hidden states hold a "
                     "value that is not finite";
        }
    } else if (error_http_ == 0) {
        const bool invalid = out.finish_reason == PAGODA_FINISH_ERROR &&
                             out.status == PAGODA_ERR_INVALID_ARGUMENT;
        error_http_ = invalid ? 400 : 500;
        error_ = out.finish_reason == PAGODA_FINISH_ERROR && out.error != nullptr
                     ? std::string(out.error)
                     : "input[" + std::to_string(index) + "] was aborted";
    }
    // A failure answers at once; the other inputs are not worth computing.
    if (error_http_ != 0 && !shutdown_abort_ && connection_ != nullptr) {
        answer();
        abort_running();
    } else if (remaining_ == 0) {
        answer();
    }
}

void Embedding::abort_running() {
    for (const Result &r : results_)
        if (!r.done && r.request_id != 0) model_->driver->abort(r.request_id);
}

void Embedding::client_gone() {
    if (connection_ == nullptr) return;
    connection_ = nullptr;
    abort_running();
}

void Embedding::abort_for_shutdown() {
    if (connection_ == nullptr || shutdown_abort_) return;  // called once per input
    shutdown_abort_ = true;
    abort_running();
}

void Embedding::answer() {
    if (connection_ == nullptr) return;
    Connection *conn = connection_;
    connection_ = nullptr;
    conn->set_embedding(nullptr);
    if (shutdown_abort_) {
        conn->respond(HttpResponse::json(
            503, error_body(503, "the server is shutting down: the request was aborted")));
        return;
    }
    if (error_http_ != 0) {
        conn->respond(HttpResponse::json(error_http_, error_body(error_http_, error_)));
        return;
    }
    conn->respond(HttpResponse::json(200, response_body()));
}

// Written by hand so that each f32 is printed as itself (embedding_text.hpp).
std::string Embedding::response_body() const {
    size_t prompt_tokens = 0;
    std::string data;
    for (size_t i = 0; i < results_.size(); ++i) {
        const Result &r = results_[i];
        prompt_tokens += r.prompt_tokens;
        data += i == 0 ? "{" : ",{";
        data += "\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
        data += request_.base64 ? "\"" + embedding_base64(r.vector) + "\""
                                : embedding_json_array(r.vector);
        data += "}";
    }
    const std::string tokens = std::to_string(prompt_tokens);
    return "{\"id\":" + dump_json(id_) + ",\"object\":\"list\",\"created\":" +
           std::to_string(created_) + ",\"model\":" + dump_json(model_->name) + ",\"data\":[" +
           data + "],\"usage\":{\"prompt_tokens\":" + tokens + ",\"total_tokens\":" + tokens +
           "}}";
}

}  // namespace pagoda::server
