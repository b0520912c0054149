// server.h: the OpenAI-compatible HTTP server over engines.
#include <uv.h>

#include <algorithm>
#include <memory>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "common/log.hpp"
#include "pagoda/server.h"
#include "server/server.hpp"

using pagoda::fail;
using pagoda::guarded;

struct pagoda_server {
    static constexpr uint32_t kMagic = 0x52565253u;  // "SRVR"
    uint32_t magic = kMagic;
    std::unique_ptr<pagoda::server::Server> impl;
    ~pagoda_server() { magic = 0; }
};

namespace {

// An engine handle as the server takes it: every call goes through the engine's C functions
// (their checks and messages), and the server never sees the handle's insides.
class HandleEnginePort final : public pagoda::server::EnginePort {
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
    pagoda_status_t metrics(pagoda_engine_metrics_t *metrics) const override {
        return pagoda_engine_get_metrics(engine_, metrics);
    }

    const void *identity() const override { return engine_; }
    std::shared_ptr<const pagoda::tok::Tokenizer> tokenizer() const override { return engine_->impl->tokenizer(); }
    int64_t vocab_size() const override { return engine_->impl->model().config().vocab_size; }
    int64_t context_length() const override {
        return std::min<int64_t>(engine_->impl->model().config().max_position, engine_->impl->cache().capacity_tokens());
    }
    int64_t hidden_size() const override { return engine_->impl->model().config().hidden_size; }
    bool has_output_callback() const override { return engine_->impl->has_output_callback(); }

private:
    pagoda_engine_t *engine_;
};

}  // namespace

extern "C" {

PAGODA_API void pagoda_server_options_init(pagoda_server_options_t *options, size_t size) {
    pagoda::init_sized(options, size, pagoda::server::default_public_server_options());
}

PAGODA_API pagoda_status_t pagoda_server_create(const pagoda_server_options_t *options,
                                                pagoda_server_t **out) {
    return guarded("pagoda_server_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        pagoda_server_options_t o =
            pagoda::read_sized(options, pagoda::server::default_public_server_options(), "options");
        auto s = std::make_unique<pagoda_server>();
        s->impl = std::make_unique<pagoda::server::Server>(pagoda::server::ServerOptions::from_public(o));
        *out = s.release();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_add_model(pagoda_server_t *server, const char *name,
                                                   pagoda_engine_t *engine) {
    return guarded("pagoda_server_add_model", [&] {
        pagoda_server *s = pagoda::require_handle(server, "server");
        if (name == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "name is NULL");
        s->impl->add_model(name, std::make_shared<HandleEnginePort>(pagoda::require_handle(engine, "engine")));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_start(pagoda_server_t *server) {
    return guarded("pagoda_server_start", [&] {
        pagoda::require_handle(server, "server")->impl->start(nullptr);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_start_on_loop(pagoda_server_t *server, void *uv_loop) {
    return guarded("pagoda_server_start_on_loop", [&] {
        pagoda_server *s = pagoda::require_handle(server, "server");
        if (uv_loop == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "uv_loop is NULL");
        s->impl->start(static_cast<uv_loop_t *>(uv_loop));
        return PAGODA_OK;
    });
}

PAGODA_API int32_t pagoda_server_port(const pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return -1;
    return server->impl->port();
}

PAGODA_API pagoda_status_t pagoda_server_stop(pagoda_server_t *server) {
    return guarded("pagoda_server_stop", [&] {
        pagoda::require_handle(server, "server")->impl->stop();
        return PAGODA_OK;
    });
}

PAGODA_API int pagoda_server_is_running(const pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return 0;
    return server->impl->running() ? 1 : 0;
}

PAGODA_API void pagoda_server_destroy(pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return;
    try {
        server->impl->stop();
        if (!server->impl->may_free()) {
            pagoda::log(PAGODA_LOG_ERROR, "pagoda_server_destroy: the server still runs on the host's loop; "
                                          "it is left allocated (run the loop until pagoda_server_is_running() "
                                          "gives 0 first)");
            return;
        }
        delete server;
    } catch (...) {
        pagoda::log(PAGODA_LOG_ERROR, "pagoda_server_destroy: failed while stopping");
    }
}

}  // extern "C"
