// One /v1/completions or /v1/chat/completions request from submission to its last output: it
// submits to the engine (one engine request per prompt: completions may batch several, each
// with n choices), gathers outputs per sequence, and answers as one JSON object or as
// Server-Sent Events. Held (shared) by its ServedModel's table under each engine request id
// until that request's last output, which may come after its client has gone (the aborts'
// outputs free it).
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
    Generation(const Generation &) = delete;
    Generation &operator=(const Generation &) = delete;

    // Submits every prompt (chat: the rendered one) and returns the engine request ids in
    // prompt order; for a stream, sends the response head. When the engine refuses one, what
    // was submitted is aborted and ApiError thrown.
    std::vector<uint64_t> start(const std::string &rendered_prompt);

    // An output of one of its requests, polled on the loop thread.
    void on_output(const pagoda_output_t &out);
    // The connection closed: abort what still runs (the last outputs still come).
    void client_gone();
    // The server's drain deadline passed: abort; the client hears "abort" or 503.
    void abort_for_shutdown();

private:
    // One prompt's engine request.
    struct Part {
        uint64_t request_id = 0;
        bool finished = false;
        size_t prompt_tokens = 0;
        std::vector<int32_t> prompt_ids;  // when echo's logprobs or prompt_logprobs name them
        std::string echo_text;            // what echo puts before each choice's text
        nlohmann::json echo_logprobs;     // completions' logprobs of the prompt's tokens
        size_t echo_offset = 0;           // text_offset after them
        nlohmann::json prompt_logprobs;   // vLLM's, when asked
    };
    struct Choice {
        std::string text;
        const char *finish_reason = nullptr;  // NULL while it runs
        size_t generated = 0;
        bool started = false;    // echo goes before its first output
        bool role_sent = false;  // chat streams send the role once
        nlohmann::json logprobs; // accumulated (non-streamed) logprobs
        size_t text_offset = 0;  // completions' text_offset
        std::unique_ptr<ToolCallStream> tools;  // chat with tools: the text read for calls
    };

    uint64_t submit(Part &part, const std::string &rendered_prompt, size_t index,
                    const pagoda_request_options_t &options);
    void prepare_echo(Part &part, size_t index) const;
    void record_prompt_logprobs(Part &part, const pagoda_output_t &out) const;
    nlohmann::json logprobs_json(const pagoda_output_t &out, Choice &c) const;
    static void append_logprobs(nlohmann::json &into, const nlohmann::json &more);
    void stream_output(size_t index, std::string text, nlohmann::json lp, Choice &c);
    void abort_running();
    void finish();
    static nlohmann::json finish_reason(const Choice &c, const char *unfinished);
    nlohmann::json usage() const;
    nlohmann::json envelope(bool chunk) const;
    static void send_event(Connection *conn, const nlohmann::json &event);

    std::shared_ptr<ServedModel> model_;
    Connection *connection_;
    GenerationRequest request_;
    std::string id_;
    int64_t created_;
    std::vector<Part> parts_;      // in prompt order, so in request id order
    size_t running_ = 0;           // parts not finished
    bool shutdown_abort_ = false;
    std::vector<Choice> choices_;  // part * n + sequence index
    pagoda_status_t error_status_ = PAGODA_OK;
    std::string error_;
};

}  // namespace pagoda::server
