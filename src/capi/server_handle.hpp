// The server handle and the engine port the facade hands the server (server_api.cpp,
// placement_serving.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "capi/handles.hpp"
#include "pagoda/engine.h"
#include "server/server.hpp"

struct pagoda_server {
    static constexpr uint32_t kMagic = 0x52565253u;  // "SRVR"
    uint32_t magic = kMagic;
    std::unique_ptr<pagoda::server::Server> impl;
    ~pagoda_server() { magic = 0; }
};

namespace pagoda {

// An engine handle as the server takes it: every call goes through the engine's C functions
// (their checks and messages), and the server never sees the handle's insides.
class HandleEnginePort : public server::EnginePort {
public:
    explicit HandleEnginePort(pagoda_engine_t *engine) : engine_(engine) {}

    pagoda_status_t submit_text(const char *text, size_t length, const pagoda_request_options_t &options,
                                uint64_t *request_id) override {
        return pagoda_engine_submit_text(engine_, text, length, &options, request_id);
    }
    pagoda_status_t submit_tokens(const int32_t *ids, size_t count, const pagoda_request_options_t &options,
                                  uint64_t *request_id) override {
        return pagoda_engine_submit_tokens(engine_, ids, count, &options, request_id);
    }
    pagoda_status_t poll(pagoda_output_t *output) override { return pagoda_engine_poll(engine_, output); }
    pagoda_status_t abort(uint64_t request_id) override { return pagoda_engine_abort(engine_, request_id); }
    pagoda_status_t step() override { return pagoda_engine_step(engine_); }
    bool has_work() const override { return pagoda_engine_has_work(engine_) != 0; }
    std::string failed_for_good() const override { return engine_->impl->failed_for_good(); }
    pagoda_status_t metrics(pagoda_engine_metrics_t *metrics) const override {
        return pagoda_engine_get_metrics(engine_, metrics);
    }

    const void *identity() const override { return engine_; }
    std::shared_ptr<const tok::Tokenizer> tokenizer() const override { return engine_->impl->tokenizer(); }
    int64_t vocab_size() const override { return engine_->impl->model().config().vocab_size; }
    int64_t context_length() const override {
        return std::min<int64_t>(engine_->impl->model().config().max_position, engine_->impl->cache().capacity_tokens());
    }
    int64_t hidden_size() const override { return engine_->impl->model().config().hidden_size; }
    bool has_output_callback() const override { return engine_->impl->has_output_callback(); }

protected:
    pagoda_engine_t *engine_;
};

}  // namespace pagoda
