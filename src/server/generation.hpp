// One /v1/completions or /v1/chat/completions request from submission to its last output: it
// submits to the engine, gathers outputs per sequence, and answers as one JSON object or as
// Server-Sent Events. Owned by its ServedModel's table until the engine's last output for it
// arrives, which may be after its client has gone (the abort's output frees the request).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"
#include "server/request_parse.hpp"
#include "server/tool_call_stream.hpp"

namespace pagoda::server {

class Connection;
struct ServedModel;

class Generation {
public:
    Generation(std::shared_ptr<ServedModel> model, Connection *connection, GenerationRequest request,
               std::string id);
    ~Generation();

    // Submits to the engine (throws ApiError: a prompt the engine refuses) and, for a stream,
    // sends the response head.
    void start(const std::string &rendered_prompt);
    uint64_t request_id() const noexcept { return request_id_; }

    // An output of this request, polled on the loop thread.
    void on_output(const pagoda_output_t &out);
    // The connection closed: abort the engine request (its last output still comes).
    void client_gone();
    // The server's drain deadline passed: abort; the client hears "abort" or 503.
    void abort_for_shutdown();

private:
    struct Choice {
        std::string text;
        const char *finish_reason = nullptr;  // NULL while it runs
        size_t generated = 0;
        bool role_sent = false;  // chat streams send the role once
        nlohmann::json logprobs; // accumulated (non-streamed) logprobs
        size_t text_offset = 0;  // completions' text_offset
        std::unique_ptr<ToolCallStream> tools;  // chat with tools: the text read for calls
    };

    nlohmann::json logprobs_json(const pagoda_output_t &out, Choice &c) const;
    void append_logprobs(nlohmann::json &into, const nlohmann::json &more) const;
    void stream_output(const pagoda_output_t &out, Choice &c);
    void finish(const pagoda_output_t &last);
    static nlohmann::json finish_reason(const Choice &c, const char *unfinished);
    nlohmann::json usage() const;
    nlohmann::json envelope(bool chunk) const;
    static void send_event(Connection *conn, const nlohmann::json &event);

    std::shared_ptr<ServedModel> model_;
    Connection *connection_;
    GenerationRequest request_;
    std::string id_;
    int64_t created_;
    uint64_t request_id_ = 0;
    bool shutdown_abort_ = false;
    std::vector<Choice> choices_;
    size_t prompt_tokens_ = 0;
    pagoda_status_t error_status_ = PAGODA_OK;
    std::string error_;
};

}  // namespace pagoda::server
