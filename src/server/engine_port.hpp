// An engine as the server sees it. The C API's facade hands each one over
// (pagoda_server_add_model) behind this interface, so the server neither unwraps a C handle
// nor calls the C API, which lies above it. Every function may be called from any thread, as
// the engine's own C functions may; a failure's message is the calling thread's last error
// (common/error.hpp), as the C API sets it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pagoda/engine.h"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::server {

class EnginePort {
public:
    virtual ~EnginePort() = default;

    // As pagoda_engine_submit_text, _submit_tokens, _poll, _abort, _step, _has_work and
    // _get_metrics.
    virtual pagoda_status_t submit_text(const char *text, size_t length, const pagoda_request_options_t &options,
                                        uint64_t *request_id) = 0;
    virtual pagoda_status_t submit_tokens(const int32_t *ids, size_t count, const pagoda_request_options_t &options,
                                          uint64_t *request_id) = 0;
    virtual pagoda_status_t poll(pagoda_output_t *output) = 0;
    virtual pagoda_status_t abort(uint64_t request_id) = 0;
    virtual pagoda_status_t step() = 0;
    virtual bool has_work() const = 0;
    virtual pagoda_status_t metrics(pagoda_engine_metrics_t *metrics) const = 0;
    // Why the engine can take no more steps (its mesh over processes failed), or "" while it
    // works: the server stops rather than fail every later request the same way.
    virtual std::string failed_for_good() const = 0;

    // The engine behind the port: two ports over one engine answer the same.
    virtual const void *identity() const = 0;
    // What the server needs to check requests: the tokenizer (NULL: token ids only), the
    // vocabulary size and the longest context a sequence may reach.
    virtual std::shared_ptr<const tok::Tokenizer> tokenizer() const = 0;
    virtual int64_t vocab_size() const = 0;
    virtual int64_t context_length() const = 0;
    // The model's hidden size: the length of an embedding (PAGODA_REQUEST_EMBED).
    virtual int64_t hidden_size() const = 0;
    // Whether the engine delivers its outputs to a callback (then the server cannot poll them).
    virtual bool has_output_callback() const = 0;
};

}  // namespace pagoda::server
